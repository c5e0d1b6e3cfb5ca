/// The Python programs behind the FTP, SFTP and HTTPS test servers (Debian's python3 with
/// python3-pyftpdlib and python3-openssl, installed by `make deps`). Each reads a JSON file
/// named by its first argument, writes its port to `ready` once it listens, and appends one
/// line per event to `events` so that tests can check what the client asked for.
enum ProtocolServerScripts {
    /// pyftpdlib, plain or with explicit FTPS (`AUTH TLS`, RFC 4217). `cut`: the next RETR of
    /// `cut.file` sends `cut.after` bytes, then the data connection is dropped (426); `change`
    /// replaces the file (its content and mtime) at that moment, as a feed being rewritten.
    static let ftp = #"""
    import json, os, sys
    from pyftpdlib.authorizers import DummyAuthorizer
    from pyftpdlib.filesystems import AbstractedFS
    from pyftpdlib.servers import FTPServer
    from pyftpdlib.handlers import FTPHandler

    cfg = json.load(open(sys.argv[1]))
    events = open(cfg["events"], "a", buffering=1)
    def log(line):
        events.write(line + "\n")

    authorizer = DummyAuthorizer()
    authorizer.add_user(cfg["user"], cfg["password"], cfg["root"], perm="elr")
    cut = dict(cfg.get("cut") or {})

    def change_file():
        change = cfg.get("change")
        if not change:
            return
        target = os.path.join(cfg["root"], change["file"])
        os.replace(change["source"], target)
        os.utime(target, (change["mtime"], change["mtime"]))
        log("CHANGED " + change["file"])

    class CutFile:
        def __init__(self, f, limit):
            self.f, self.left = f, limit
        def read(self, n=-1):
            if self.left <= 0:
                change_file()
                log("CUT")
                raise OSError(104, "cut by the test server")
            data = self.f.read(min(n, self.left) if n and n > 0 else self.left)
            self.left -= len(data)
            return data
        def __getattr__(self, name):
            return getattr(self.f, name)

    class FS(AbstractedFS):
        def open(self, filename, mode):
            f = super().open(filename, mode)
            if cut.get("times", 0) > 0 and os.path.basename(filename) == cut["file"] and "r" in mode:
                cut["times"] -= 1
                return CutFile(f, cut["after"])
            return f

    if cfg.get("cert"):
        from pyftpdlib.handlers import TLS_FTPHandler as Base, TLS_DTPHandler

        class DTP(TLS_DTPHandler):
            # libcurl starts TLS on a passive data connection as soon as it connects, before
            # RETR; pyftpdlib 1.5 would close a data channel that is readable that early.
            def readable(self):
                if not self.receive and not self._initialized:
                    return self._ssl_accepting
                return super().readable()

        Base.dtp_handler = DTP
        Base.certfile = cfg["cert"]
        Base.keyfile = cfg["key"]
        Base.tls_control_required = True
        Base.tls_data_required = True
    else:
        Base = FTPHandler

    class Handler(Base):
        abstracted_fs = FS
        def ftp_USER(self, line):
            log("USER " + line)
            return super().ftp_USER(line)
        def ftp_AUTH(self, line):
            log("AUTH " + line)
            return super().ftp_AUTH(line)
        def ftp_REST(self, line):
            log("REST " + line)
            return super().ftp_REST(line)
        def ftp_PORT(self, line):
            log("PORT")
            return super().ftp_PORT(line)
        def ftp_EPRT(self, line):
            log("EPRT")
            return super().ftp_EPRT(line)
        def ftp_EPSV(self, line):
            log("EPSV")
            return super().ftp_EPSV(line)
        def ftp_RETR(self, path):
            log("RETR " + os.path.basename(path))
            return super().ftp_RETR(path)
        def on_login_failed(self, username, password):
            log("LOGIN-FAILED " + username)

    Handler.authorizer = authorizer
    Handler.auth_failed_timeout = 0.1
    Handler.use_sendfile = False  # reads go through FS.open's file, so a cut can happen
    Handler.banner = "dropfetch test server"
    Handler.passive_ports = None
    server = FTPServer(("127.0.0.1", 0), Handler)
    port = server.socket.getsockname()[1]
    with open(cfg["ready"] + ".tmp", "w") as ready:
        ready.write(str(port))
    os.rename(cfg["ready"] + ".tmp", cfg["ready"])
    server.serve_forever(handle_exit=True)
    """#

    /// The SFTP subsystem of the test sshd: OpenSSH's sftp-server behind a relay that counts the
    /// bytes it sends per session. While the `cut.marker` file exists, the session that consumes
    /// it ends after `cut.after` bytes (a dropped connection), after applying `change`.
    static let sftpRelay = #"""
    import json, os, select, subprocess, sys

    cfg = json.load(open(sys.argv[1]))
    events = open(cfg["events"], "a", buffering=1)
    cut = None
    try:
        os.unlink(cfg["cut"]["marker"])
        cut = cfg["cut"]["after"]
    except (KeyError, TypeError, FileNotFoundError):
        pass
    child = subprocess.Popen([cfg["server"], "-e"], stdin=subprocess.PIPE, stdout=subprocess.PIPE, bufsize=0)
    out = child.stdout.fileno()
    sent = 0
    # Bytes the client sent after `cut` bytes went out: its next READ requests, which libssh2
    # issues only once it has taken earlier answers, so the client surely has data by the cut.
    asked_after_cut = 0
    watched = [0, out]
    events.write("SESSION\n")
    while True:
        readable, _, _ = select.select(watched, [], [])
        if 0 in readable:
            data = os.read(0, 65536)
            if data:
                child.stdin.write(data)
                if cut is not None and sent >= cut:
                    asked_after_cut += len(data)
            else:
                child.stdin.close()
                watched.remove(0)
        if out in readable:
            data = os.read(out, 65536)
            if not data:
                break
            view = memoryview(data)
            while view:
                view = view[os.write(1, view):]
            sent += len(data)
        if cut is not None and sent >= cut and asked_after_cut >= 300:
            change = cfg.get("change")
            if change:
                os.replace(change["source"], change["target"])
                os.utime(change["target"], (change["mtime"], change["mtime"]))
                events.write("CHANGED\n")
            events.write("CUT %d\n" % sent)
            child.kill()
            # Drop the TCP connection, as a network cut does: end the sshd processes of this
            # session (up to the listener). A merely closed channel would leave libssh2 1.10
            # waiting for data until the low-speed limit.
            listener = int(open(cfg["listener_pid_file"]).read())
            pid = os.getppid()
            while pid > 1 and pid != listener:
                parent = int(open("/proc/%d/stat" % pid).read().rsplit(")", 1)[1].split()[1])
                os.kill(pid, 9)
                pid = parent
            os._exit(1)
    events.write("SENT %d\n" % sent)
    """#

    /// An HTTPS file server (http.server over ssl) with a certificate from the test CA; with
    /// `client_ca` it asks for a client certificate and refuses a handshake without one.
    static let https = #"""
    import http.server, json, os, ssl, sys

    cfg = json.load(open(sys.argv[1]))
    events = open(cfg["events"], "a", buffering=1)

    class Handler(http.server.SimpleHTTPRequestHandler):
        protocol_version = "HTTP/1.1"
        def __init__(self, *args, **kwargs):
            super().__init__(*args, directory=cfg["root"], **kwargs)
        def log_message(self, format, *args):
            events.write("REQUEST " + self.requestline + "\n")

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.load_cert_chain(cfg["cert"], cfg["key"])
    if cfg.get("client_ca"):
        context.verify_mode = ssl.CERT_REQUIRED
        context.load_verify_locations(cfg["client_ca"])
    server.socket = context.wrap_socket(server.socket, server_side=True)
    port = server.socket.getsockname()[1]
    with open(cfg["ready"] + ".tmp", "w") as ready:
        ready.write(str(port))
    os.rename(cfg["ready"] + ".tmp", cfg["ready"])
    server.serve_forever()
    """#

    /// A forward HTTP proxy that is its own upstream: a request for an absolute URL is logged
    /// (`PROXY GET http://…`) and answered from `files` (by the URL's last path segment), or
    /// with a redirect to `redirects[url]`. Nothing is fetched from anywhere.
    static let proxy = #"""
    import http.server, json, os, sys

    cfg = json.load(open(sys.argv[1]))
    events = open(cfg["events"], "a", buffering=1)

    class Handler(http.server.BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"
        def log_message(self, format, *args):
            pass
        def do_GET(self):
            events.write("PROXY GET " + self.path + "\n")
            target = cfg.get("redirects", {}).get(self.path)
            if target:
                self.send_response(302)
                self.send_header("Location", target)
                self.send_header("Content-Length", "0")
                self.end_headers()
                return
            name = self.path.rsplit("/", 1)[-1]
            path = os.path.join(cfg["root"], name)
            if not self.path.startswith("http://") or not os.path.isfile(path):
                self.send_response(404)
                self.send_header("Content-Length", "0")
                self.end_headers()
                return
            data = open(path, "rb").read()
            self.send_response(200)
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    port = server.socket.getsockname()[1]
    with open(cfg["ready"] + ".tmp", "w") as ready:
        ready.write(str(port))
    os.rename(cfg["ready"] + ".tmp", cfg["ready"])
    server.serve_forever()
    """#
}
