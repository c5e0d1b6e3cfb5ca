import Testing
@testable import DropFetch

/// Issue 14: the config keys `tls`, `ftp`, `sftp`, `proxy`, `no_proxy`, `netrc` (DESIGN.md §4), at
/// the top level and per class, a class's keys inheriting those it leaves out.
@Suite("Config: tls, ftp, sftp, proxy, no_proxy, netrc")
struct NetworkConfigTests {
    @Test("defaults: system CA store, FTP tls try and passive, host keys from ~/.ssh/known_hosts, no netrc")
    func defaults() throws {
        let network = try ConfigLoader.parse("", file: "t.yaml").network
        #expect(network == Config.Network())
        #expect(network.ftp.tls == .try && network.ftp.passive)
        #expect(network.sftp.knownHosts == nil && network.proxy == nil && network.netrc == .off)
    }

    @Test("every key is read")
    func allKeys() throws {
        let config = try ConfigLoader.parse("""
            tls: { ca_file: /etc/ca.pem, ca_path: /etc/certs, client_cert: /c.pem, client_key: /c.key }
            ftp: { tls: require, passive: false }
            sftp: { known_hosts: ~/.ssh/known_hosts, key_file: ~/.ssh/id_ed25519, key_passphrase_file: /run/pass }
            proxy: cache.example.net:3128
            no_proxy: " localhost, .internal ,10.0.0.0/8"
            netrc: true
            """, file: "t.yaml")
        let network = config.network
        #expect(network.tls.caFile == "/etc/ca.pem" && network.tls.caPath == "/etc/certs")
        #expect(network.tls.clientCert == "/c.pem" && network.tls.clientKey == "/c.key")
        #expect(network.ftp.tls == .require && !network.ftp.passive)
        #expect(network.sftp.knownHosts == "~/.ssh/known_hosts" && network.sftp.keyPassphraseFile == "/run/pass")
        #expect(network.proxy == "http://cache.example.net:3128", "a proxy without a scheme is HTTP, as in curl")
        #expect(network.noProxy == "localhost,.internal,10.0.0.0/8")
        #expect(network.netrc == .home)
        #expect(try ConfigLoader.parse("netrc: /etc/dropfetch/netrc", file: "t").network.netrc == .file("/etc/dropfetch/netrc"))
        #expect(try ConfigLoader.parse("proxy: \"\"", file: "t").network.proxy == "")
        #expect(try ConfigLoader.parse("no_proxy: [a.example, b.example]", file: "t").network.noProxy == "a.example,b.example")
    }

    @Test("a class overrides key by key and inherits the rest; other classes keep the top level's")
    func perClass() throws {
        let config = try ConfigLoader.parse("""
            tls: { ca_file: /etc/ca.pem }
            ftp: { tls: require }
            proxy: http://top:3128
            classes:
              - name: partner
                match: { host: "*.partner.example" }
                tls: { client_cert: /partner.pem }
                ftp: { passive: false }
                proxy: ""
                netrc: /etc/partner.netrc
              - name: plain
                priority: 1
            """, file: "t.yaml")
        let partner = config.network(for: config.classes[0])
        #expect(partner.tls.caFile == "/etc/ca.pem" && partner.tls.clientCert == "/partner.pem")
        #expect(partner.ftp.tls == .require && !partner.ftp.passive)
        #expect(partner.proxy == "" && partner.netrc == .file("/etc/partner.netrc"))
        #expect(config.network(for: config.classes[1]) == config.network)
        #expect(config.network(for: nil).proxy == "http://top:3128")
    }

    @Test("errors name the key; a proxy's password never appears", arguments: [
        ("ftp: { tls: always }", "ftp.tls"),
        ("ftp: { passive: yes }", "ftp.passive"),
        ("tls: { ca: /x }", "tls.ca"),
        ("tls: { client_key: /k }", "tls"),
        ("sftp: { known_host: /x }", "sftp.known_host"),
        ("proxy: ftp://user:hunter2@proxy:21", "proxy"),
        ("proxy: \"http://user:hunter2@ bad\"", "proxy"),
        ("proxy: [a]", "proxy"),
        ("netrc: 3.5.x\nnetrc: true", "netrc"),
        ("classes:\n  - name: c\n    ftp: { tls: maybe }", "classes[0].ftp.tls"),
    ])
    func errors(yaml: String, keyPath: String) {
        do {
            let config = try ConfigLoader.parse(yaml, file: "t.yaml")
            Issue.record("expected an error, got \(config.network)")
        } catch {
            #expect(error.keyPath == keyPath, "\(error)")
            #expect(!error.description.contains("hunter2"), "\(error)")
        }
    }
}
