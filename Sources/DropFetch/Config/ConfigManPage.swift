/// dropfetch.yaml(5) in mdoc, from ConfigReference, so the page lists the keys the loader accepts (`make man`).
public enum ConfigManPage {
    /// The whole page; `date` is mdoc's `.Dd` text, such as `2026-11-27`.
    public static func render(date: String) -> String {
        var lines = [
            ".Dd \(date)",
            ".Dt DROPFETCH.YAML 5",
            ".Os",
            ".Sh NAME",
            ".Nm dropfetch.yaml",
            ".Nd the dropfetch config file",
            ".Sh SYNOPSIS",
            ".Pa /etc/dropfetch/config.yaml",
            ".Sh DESCRIPTION",
            text("Every dropfetch command reads its config from --config, else $DROPFETCH_CONFIG, else "
                + "/etc/dropfetch/config.yaml if it exists, else the built-in defaults below. The file is "
                + "YAML: a mapping of the keys below; a key left out keeps its default. Unknown or duplicate "
                + "keys, anchors, aliases and tags are errors naming the file, line, column and key; "
                + "dropfetch check tests a file without running. A running agent re-reads the file when it "
                + "changes, and on SIGHUP."),
            ".Pp",
            text("A size is bytes, or a number with KB, MB, GB or TB, powers of 1024 (K, M, G and KiB, MiB, "
                + "GiB mean the same): 64KB, 20MiB. A duration is a number with ms, s, m, h or d, or a compound "
                + "such as 1h30m; a bare number only for 0. A key such as "
                + "retry.attempts is the key attempts in the mapping retry; classes[] is an item of the "
                + "list classes; NAME is a class name."),
        ]
        for section in ConfigReference.sections {
            lines += [".Ss \(text(section.title))", ".Bl -tag -width Ds"]
            for entry in section.entries {
                lines += [".It Sy \(entry.key)", text("(\(entry.value)) \(entry.meaning)")]
            }
            lines.append(".El")
        }
        lines += [
            ".Sh FILES",
            ".Bl -tag -width Ds",
            ".It Pa /etc/dropfetch/config.yaml",
            text("The config of the service and of every command run without --config or $DROPFETCH_CONFIG "
                + "(a conffile of the Debian package: an edit survives upgrades)."),
            ".It Pa /usr/share/doc/dropfetch/config.example.yaml",
            text("Every key with its default and a comment (under /usr/local for make install); "
                + "docs/config.md beside it says more of each."),
            ".El",
            ".Sh EXAMPLES",
            ".Bd -literal -offset indent",
            "spool: /var/spool/dropfetch",
            "destination: /srv/downloads",
            "concurrency: { total: 4, per_host: 2 }",
            "classes:",
            "  - { name: iso, match: { url: \"*.iso\" }, priority: -10, max_active: 1 }",
            "schedule:",
            "  - { days: Mon-Fri, time: \"08:00-18:00\", rate_limit: 2MB }",
            ".Ed",
            ".Sh SEE ALSO",
            ".Xr dropfetch 1 ,",
            ".Xr dropfetch.check 1 ,",
            ".Xr dropfetch.run 1",
        ]
        return lines.joined(separator: "\n") + "\n"
    }

    /// A text line of mdoc: backslashes escaped, and a leading `.` or `'` kept from reading as a request.
    static func text(_ line: String) -> String {
        let escaped = line.replacingBackslashes()
        return escaped.hasPrefix(".") || escaped.hasPrefix("'") ? "\\&" + escaped : escaped
    }
}

extension String {
    /// `\` as mdoc's `\e`.
    fileprivate func replacingBackslashes() -> String {
        var out = ""
        for character in self { out += character == "\\" ? "\\e" : String(character) }
        return out
    }
}
