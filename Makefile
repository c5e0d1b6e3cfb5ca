# dropfetch — build, test, run and benchmark.
#   make deps      install the missing build dependencies (Debian/Ubuntu, apt-get)
#   make build     debug build              make release   release build (Swift runtime linked in)
#   make run       debug build, then `dropfetch run` with built-in defaults (spool ./spool); ARGS="--once"
#   make test      install the test servers' packages, build the tests and run them (Swift Testing),
#                  then make test-tsan
#   make test-tsan the suites again under ThreadSanitizer (its own build in .build-tsan): every suite but
#                  TSAN_SKIP; a race in the tests or in an agent they start fails it (TSAN_OPTIONS below)
#   make install   release build, man pages, completions, systemd units, tmpfiles/sysusers entries,
#                  docs and (if there is none) /etc/dropfetch/config.yaml; PREFIX (/usr/local), DESTDIR
#   make uninstall remove what install put there (a config that was edited stays)
#   make test-install  install into a scratch DESTDIR and check it: files, man pages, ldd, units
#                  (systemd-analyze verify and security), the service tests against the installed binary
#   make deb       the Debian package dropfetch_<version>_<arch>.deb (release build, debhelper's maintainer
#                  scripts, lintian): see the "Debian package" block below and docs/service.md
#   make test-deb  make deb, then install it into a scratch root with dpkg and check it:
#                  Tests/Install/check-deb.sh
#   make test-distributed  the multi-agent end-to-end tests on a real GlusterFS volume mounted three times
#                  (installs glusterfs-server and glusterfs-client if missing; needs root and /dev/fuse;
#                  sets up glusterd, the volume and the mounts, the third from a network namespace that
#                  the split tests cut off from the brick, and tears them down): Tests/Distributed/gluster.sh
#   make bench     release build, then bench/run.sh: P1–P6 of issue 12 beside curl and aria2c, written to
#                  bench/RESULTS.md (installs nginx, aria2, curl, strace and time if missing; fetches a
#                  curl 8 into bench/out/curl8 with bench/curl8.sh, or compares against the system's);
#                  then bench/instructions.sh: instructions, context switches and page faults per small
#                  job beside curl (valgrind, perf; installed if missing)
#   make screenshots  the status page at phone and desktop widths, light and dark, rendered by headless
#                  Chromium into docs/status-page-*.png (installs chromium if missing)
#   make fuzz      build the libFuzzer targets of Fuzz/ (job files, config, headers, state files, quota
#                  ledgers), run each FUZZ_SECONDS (600) s; FUZZ_TARGETS="ledger" runs only those; Fuzz/README.md
#   make clean     remove build products (keeps fetched package checkouts)

SHELL := /bin/bash
.SHELLFLAGS := -eu -o pipefail -c
.NOTPARALLEL:
.DEFAULT_GOAL := build

ifeq ($(shell command -v swift 2>/dev/null),)
export PATH := /opt/swift/usr/bin:$(PATH)
endif

SWIFT ?= swift
ARGS ?=
FUZZ_TARGETS ?=
DEPS_PKGS := libcurl4-openssl-dev libyaml-dev libssl-dev pkg-config curl
# The end-to-end tests start their own servers: pyftpdlib (FTP, explicit FTPS with pyOpenSSL) and an
# HTTPS server on Debian's python3 (its pip is closed by PEP 668, so apt), OpenSSH's sshd run as the
# current user (SFTP), openssl and ssh-keygen for their certificates and keys; libfaketime (faketime)
# runs the schedule tests' agents under a fake wall clock.
TEST_PKGS := python3 python3-pyftpdlib python3-openssl openssh-server openssh-client openssh-sftp-server openssl faketime
# The status page's test renders it in headless Chromium (a large package: installed only when missing).
BROWSER_PKGS := chromium
TEST_LOG := .build/test-output.txt

# ThreadSanitizer run (make test-tsan): a scratch path of its own, so neither build redoes the other.
# The end-to-end tests start the dropfetch built beside the test bundle, the TSan one here. An agent
# stops at its first race with exit 66 (so the test that started it fails) and every report, the test
# process's own included, goes to a file in TSAN_REPORTS, which must stay empty.
# Skipped: the schedule suites' agents and clockJumpKeepsCounts' run under libfaketime, whose
# clock_gettime cannot serve TSan's start-up; the browser suite renders in Chromium; the Distributed suites need GlusterFS mounts;
# FencingTests stops agents with SIGSTOP for a fixed time against a 2 s lease, which agents slowed by
# TSan do not keep, and its five minutes of end-to-end runs held a test thread so long that a suite
# with a time limit ran out of it (its threads: the lease and the workers, still run under TSan by
# every other end-to-end suite's agents);
# MultiAgentTests' twoAgentsShareOneSpool asserts that two agents' downloads overlapped in time,
# which agents slowed several times by TSan did not always do (its agents run in the other
# MultiAgentTests, which stay); the test server's own suites run the system curl through
# Foundation's Process and test no dropfetch code (under TSan they hung once, all together);
# SegmentedDownloadTests' workStealing needs one connection to fetch 31 pieces while the other
# drips one, which under TSan on a busy machine it did not always do (the steal path's threads run
# in the other segmented-download tests, which stay).
TSAN_BUILD := .build-tsan
TSAN_FLAGS := --sanitize=thread --scratch-path $(TSAN_BUILD)
TSAN_LOG := $(TSAN_BUILD)/test-output.txt
TSAN_REPORTS := $(TSAN_BUILD)/tsan-reports
TSAN_SKIP := ScheduleTests|ScheduleRestartTests|clockJumpKeepsCounts|StatusPageBrowserTests|DistributedTests|DistributedSplitTests|FencingTests|twoAgentsShareOneSpool|TestHTTPServerFaultTests|TestHTTPServerTests|ScriptedHTTPServerTests|workStealing
TSAN_OPTIONS_RUN := halt_on_error=1:exitcode=66:log_path=$(CURDIR)/$(TSAN_REPORTS)/report

# The release binary carries the Swift runtime and FoundationEssentials (--static-swift-stdlib) and no
# RUNPATH (--disable-local-rpath): it needs only the system's libraries, not the toolchain.
# Its size (make test-install fails when the stripped binary is not under 20,000,000 bytes; the
# figures are in docs/service.md): our modules and swift-argument-parser are compiled with -O (for
# speed: issue 34; -Osize cost 9 % of P6's CPU and 14 % of its instructions for 0.4 MB) and linked
# as one LLVM module (full LTO, by lld), which drops the code no caller reaches; identical
# functions whose address nothing takes are kept once (--icf=safe: lld reads the address-significance
# table of the LTO object; the prebuilt runtime libraries have none, so all of theirs stay apart);
# the LTO module's call-frame information goes to .debug_frame, which strip removes, not .eh_frame
# (LLVM's exception model sjlj: that module has no landing pad, so the model decides only where the
# CFI goes, and a landing pad would fail the link on _Unwind_SjLj_Register; no exception unwinds
# through Swift code, but gdb and perf --call-graph=dwarf need the unstripped binary to walk its
# frames); the executable exports no symbols (the static stdlib's link arguments export ours with
# -export-dynamic; nothing loads them); and its relative relocations are packed (DT_RELR), which
# glibc loads from 2.36 on: an older glibc, which could not start such a binary, gets them unpacked
# (and a binary about 0.9 MB bigger). Exclusivity is checked at compile time everywhere and at run
# time in debug and test builds; the release binary leaves out the run-time checks
# (-enforce-exclusivity=unchecked: swift_beginAccess was 3 % of a small job's instructions, issue 34).
# Copies and destroys of optionals, tuples and results are emitted for their type, not as calls to
# their value witnesses through type metadata (-disable-type-layout, on by default at -O): those
# generic witnesses took 13 K instructions a small job (callgrind; 5 K fewer in all without them).
# It is a frontend flag with no stability promise: a toolchain without it fails the build at once.
RELR_FLAGS := $(shell getconf GNU_LIBC_VERSION 2>/dev/null | awk '{ split($$2, v, "."); \
  if (v[1] > 2 || (v[1] == 2 && v[2] >= 36)) print "-Xlinker -z -Xlinker pack-relative-relocs" }')
SIZE_FLAGS := -Xswiftc -O -Xswiftc -enforce-exclusivity=unchecked -Xswiftc -Xfrontend -Xswiftc -disable-type-layout --experimental-lto-mode=full -Xlinker --icf=safe \
  -Xlinker -mllvm -Xlinker -exception-model=sjlj -Xlinker --no-export-dynamic $(RELR_FLAGS)
RELEASE_FLAGS := -c release --static-swift-stdlib --disable-local-rpath $(SIZE_FLAGS)
RELEASE_BIN := .build/release/dropfetch

# Install layout. The binary looks for /etc/dropfetch/config.yaml whatever the prefix.
PREFIX ?= /usr/local
DESTDIR ?=
BINDIR ?= $(PREFIX)/bin
MANDIR ?= $(PREFIX)/share/man
DOCDIR ?= $(PREFIX)/share/doc/dropfetch
SYSCONFDIR ?= /etc
UNITDIR ?= $(PREFIX)/lib/systemd/system
TMPFILESDIR ?= $(PREFIX)/lib/tmpfiles.d
SYSUSERSDIR ?= $(PREFIX)/lib/sysusers.d
BASHCOMPDIR ?= $(PREFIX)/share/bash-completion/completions
ZSHCOMPDIR ?= $(PREFIX)/share/zsh/site-functions
FISHCOMPDIR ?= $(PREFIX)/share/fish/vendor_completions.d
# `make install INSTALL_STRIP=` keeps the symbols and the call-frame information (a binary of about
# 30 MB, whose stack gdb and perf can walk and name).
INSTALL_STRIP ?= -s
UNITS := dropfetch.service dropfetch-once.service dropfetch-once.timer dropfetch.path
# Docs keep the repository's layout under DOCDIR, so the links between them hold.
DOCS := README.md config.example.yaml contrib/cron.example contrib/dropfetch.logrotate contrib/nginx-status-page.conf $(wildcard docs/*.md) $(wildcard docs/*.png)
# Man pages carry the date of the last commit, so two builds of one commit give the same pages.
MAN_DATE ?= $(shell git log -1 --format=%cs 2>/dev/null || date +%F)
MAN_OUT := .build/plugins/GenerateManual/outputs/dropfetch
COMPLETIONS_OUT := .build/completions
# Installed units start the installed binary by its path; contrib/ names it bare (found in systemd's
# fixed search path, /usr/local/bin before /usr/bin) and points at the docs under /usr/local.
SUBSTITUTE := sed -e 's|^ExecStart=dropfetch |ExecStart=$(BINDIR)/dropfetch |' -e 's|/usr/local/share/doc/dropfetch|$(DOCDIR)|g'

# install_missing: apt-get install the packages named in $$missing, if any. A word "a|b" installs the
# first of a, b that apt knows. Root runs apt-get itself; others go through sudo when it exists.
define install_missing
if [ -n "$$missing" ]; then \
  if [ "$$(id -u)" -eq 0 ]; then sudo=""; \
  elif command -v sudo >/dev/null 2>&1; then sudo="sudo"; \
  else echo "error: not root and no sudo; install these packages:$$missing" >&2; exit 1; fi; \
  $$sudo env DEBIAN_FRONTEND=noninteractive apt-get update -q; \
  pkgs=""; \
  for alt in $$missing; do \
    pick="$${alt%%|*}"; \
    for p in $${alt//|/ }; do \
      case "$$(apt-cache show "$$p" 2>/dev/null || true)" in *"Package: "*) pick="$$p"; break ;; esac; \
    done; \
    pkgs="$$pkgs $$pick"; \
  done; \
  echo "installing:$$pkgs"; \
  $$sudo env DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends $$pkgs; \
fi
endef

.PHONY: deps test-deps browser-deps screenshots bench-deps install-deps distributed-deps build release man completions install uninstall \
	test-install run test test-tsan test-distributed bench fuzz clean deb-deps deb test-deb

deps:
	@if ! command -v dpkg >/dev/null 2>&1; then \
	  echo "deps: no dpkg here; make sure these (or your system's equivalents) are installed: $(DEPS_PKGS)"; \
	  exit 0; \
	fi; \
	missing=""; \
	for p in $(DEPS_PKGS); do \
	  case "$$(dpkg -s "$$p" 2>/dev/null || true)" in \
	    *"Status: install ok installed"*) ;; \
	    *) missing="$$missing $$p" ;; \
	  esac; \
	done; \
	$(install_missing)

# Packages by name: a test that cannot start its server fails, so in CI nothing is skipped.
test-deps: deps
	@missing=""; \
	if command -v dpkg >/dev/null 2>&1; then \
	  for p in $(TEST_PKGS) $(BROWSER_PKGS); do \
	    case "$$(dpkg -s "$$p" 2>/dev/null || true)" in \
	      *"Status: install ok installed"*) ;; \
	      *) missing="$$missing $$p" ;; \
	    esac; \
	  done; \
	else \
	  echo "test-deps: no dpkg here; make sure these (or your system's equivalents) are installed: $(TEST_PKGS) $(BROWSER_PKGS)"; \
	fi; \
	$(install_missing)

# Chromium alone, for make screenshots; the check is dpkg's, so an installed package costs nothing.
browser-deps: deps
	@missing=""; \
	if command -v dpkg >/dev/null 2>&1; then \
	  for p in $(BROWSER_PKGS); do \
	    case "$$(dpkg -s "$$p" 2>/dev/null || true)" in \
	      *"Status: install ok installed"*) ;; \
	      *) missing="$$missing $$p" ;; \
	    esac; \
	  done; \
	fi; \
	$(install_missing)

# The status page test's spool, rendered as an agent writes it, into docs/status-page-{phone,desktop}-{light,dark}.png.
screenshots: browser-deps
	$(SWIFT) build --build-tests
	DROPFETCH_SCREENSHOTS=$(CURDIR)/docs $(SWIFT) test --skip-build --disable-xctest --enable-swift-testing \
	  --filter 'StatusPageBrowserTests'
	@ls -l docs/status-page-*.png

# The bench needs the commands, however they were installed; nginx-light is the smallest nginx.
# strace counts the idle daemon's wake-ups (P5); /usr/bin/time gives P6's CPU time. bench/curl8.sh
# fetches the curl 8 the bench compares against (issue 23: Debian 12's 7.88 is slower at --parallel)
# into bench/out/curl8 without touching the system's libcurl; when it cannot, the bench uses `curl`.
bench-deps: deps
	@PATH="$$PATH:/usr/sbin:/sbin"; \
	missing=""; \
	command -v nginx >/dev/null 2>&1 || missing="$$missing nginx-light|nginx"; \
	command -v aria2c >/dev/null 2>&1 || missing="$$missing aria2"; \
	command -v curl >/dev/null 2>&1 || missing="$$missing curl"; \
	command -v strace >/dev/null 2>&1 || missing="$$missing strace"; \
	command -v python3 >/dev/null 2>&1 || missing="$$missing python3"; \
	[ -x /usr/bin/time ] || missing="$$missing time"; \
	$(install_missing); \
	if c=$$(bench/curl8.sh); then echo "bench-deps: the bench compares against $$($$c --version | head -n 1 | cut -d' ' -f1-2) ($$c)"; \
	else echo "bench-deps: no curl 8 (above); the bench compares against $$(curl --version | head -n 1 | cut -d' ' -f1-2)"; fi

build: deps
	$(SWIFT) build

release: deps
	$(SWIFT) build $(RELEASE_FLAGS)

# Commands for the install checks: groff, systemd-analyze, readelf, unshare.
install-deps: deps
	@PATH="$$PATH:/usr/sbin:/sbin"; \
	missing=""; \
	command -v groff >/dev/null 2>&1 || missing="$$missing groff-base"; \
	command -v systemd-analyze >/dev/null 2>&1 || missing="$$missing systemd"; \
	command -v readelf >/dev/null 2>&1 || missing="$$missing binutils"; \
	command -v unshare >/dev/null 2>&1 || missing="$$missing util-linux"; \
	$(install_missing)

# One page per command, from swift-argument-parser's generate-manual plugin (mdoc). It documents
# the debug build, which has the same commands and help as the release one and is already there.
# A blank line between paragraphs of a command's discussion becomes mdoc's paragraph macro .Pp.
# Then (issue 36) the pages get written EXIT STATUS and FILES sections (contrib/man/splice.sh), the
# empty page of the help command and that of the hidden config-manual are dropped, and
# dropfetch.yaml(5) is written from the table of config keys (ConfigReference) by `config-manual`.
man: deps
	rm -rf $(MAN_OUT)
	$(SWIFT) package generate-manual --configuration debug --multi-page --date $(MAN_DATE)
	sed -i 's/^$$/.Pp/' $(MAN_OUT)/*.1
	rm -f $(MAN_OUT)/dropfetch.help.1 $(MAN_OUT)/dropfetch.config-manual.1
	contrib/man/splice.sh $(MAN_OUT)
	.build/debug/dropfetch config-manual --date "$$(sed -n 's/^\.Dd //p' $(MAN_OUT)/dropfetch.1)" > $(MAN_OUT)/dropfetch.yaml.5

# The bash script loses its #! line: bash-completion sources it, nothing runs it (lintian).
completions: release
	@mkdir -p $(COMPLETIONS_OUT)
	$(RELEASE_BIN) --generate-completion-script bash | sed '1{/^#!/d}' > $(COMPLETIONS_OUT)/dropfetch
	$(RELEASE_BIN) --generate-completion-script zsh > $(COMPLETIONS_OUT)/_dropfetch
	$(RELEASE_BIN) --generate-completion-script fish > $(COMPLETIONS_OUT)/dropfetch.fish

install: release man completions
	install -d $(DESTDIR)$(BINDIR) $(DESTDIR)$(MANDIR)/man1 $(DESTDIR)$(DOCDIR) $(DESTDIR)$(UNITDIR) \
	  $(DESTDIR)$(TMPFILESDIR) $(DESTDIR)$(SYSUSERSDIR) $(DESTDIR)$(BASHCOMPDIR) $(DESTDIR)$(ZSHCOMPDIR) \
	  $(DESTDIR)$(FISHCOMPDIR) $(DESTDIR)$(SYSCONFDIR)/dropfetch
	install $(INSTALL_STRIP) -m 0755 $(RELEASE_BIN) $(DESTDIR)$(BINDIR)/dropfetch
	install -m 0644 $(MAN_OUT)/*.1 $(DESTDIR)$(MANDIR)/man1/
	install -d $(DESTDIR)$(MANDIR)/man5
	install -m 0644 $(MAN_OUT)/*.5 $(DESTDIR)$(MANDIR)/man5/
	install -m 0644 $(COMPLETIONS_OUT)/dropfetch $(DESTDIR)$(BASHCOMPDIR)/dropfetch
	install -m 0644 $(COMPLETIONS_OUT)/_dropfetch $(DESTDIR)$(ZSHCOMPDIR)/_dropfetch
	install -m 0644 $(COMPLETIONS_OUT)/dropfetch.fish $(DESTDIR)$(FISHCOMPDIR)/dropfetch.fish
	for unit in $(UNITS); do $(SUBSTITUTE) contrib/$$unit > $(DESTDIR)$(UNITDIR)/$$unit; done
	chmod 0644 $(addprefix $(DESTDIR)$(UNITDIR)/,$(UNITS))
	install -m 0644 contrib/dropfetch.tmpfiles $(DESTDIR)$(TMPFILESDIR)/dropfetch.conf
	install -m 0644 contrib/dropfetch.sysusers $(DESTDIR)$(SYSUSERSDIR)/dropfetch.conf
	for doc in $(DOCS); do install -D -m 0644 $$doc $(DESTDIR)$(DOCDIR)/$$doc; done
	@if [ -e $(DESTDIR)$(SYSCONFDIR)/dropfetch/config.yaml ]; then \
	  echo "kept $(DESTDIR)$(SYSCONFDIR)/dropfetch/config.yaml"; \
	else \
	  $(SUBSTITUTE) contrib/config.yaml > $(DESTDIR)$(SYSCONFDIR)/dropfetch/config.yaml; \
	  chmod 0644 $(DESTDIR)$(SYSCONFDIR)/dropfetch/config.yaml; \
	  echo "installed $(DESTDIR)$(SYSCONFDIR)/dropfetch/config.yaml"; \
	fi
	@echo "next: systemd-sysusers; systemd-tmpfiles --create; systemctl daemon-reload; systemctl enable --now dropfetch"

# Removes the files install wrote; the config only if it is still the one install wrote.
uninstall:
	rm -f $(DESTDIR)$(BINDIR)/dropfetch $(DESTDIR)$(MANDIR)/man1/dropfetch.1 $(DESTDIR)$(MANDIR)/man1/dropfetch.*.1
	rm -f $(DESTDIR)$(MANDIR)/man5/dropfetch.yaml.5
	rm -f $(DESTDIR)$(BASHCOMPDIR)/dropfetch $(DESTDIR)$(ZSHCOMPDIR)/_dropfetch $(DESTDIR)$(FISHCOMPDIR)/dropfetch.fish
	rm -f $(addprefix $(DESTDIR)$(UNITDIR)/,$(UNITS))
	rm -f $(DESTDIR)$(TMPFILESDIR)/dropfetch.conf $(DESTDIR)$(SYSUSERSDIR)/dropfetch.conf
	rm -rf $(DESTDIR)$(DOCDIR)
	@config=$(DESTDIR)$(SYSCONFDIR)/dropfetch/config.yaml; \
	if [ -e "$$config" ] && $(SUBSTITUTE) contrib/config.yaml | cmp -s - "$$config"; then \
	  rm -f "$$config"; rmdir $(DESTDIR)$(SYSCONFDIR)/dropfetch 2>/dev/null || true; \
	elif [ -e "$$config" ]; then echo "kept $$config (edited)"; fi

# A scratch install (PREFIX=/usr) checked as an admin would: see Tests/Install/check-install.sh.
test-install: install-deps
	$(SWIFT) build --build-tests
	Tests/Install/check-install.sh

# ---- Debian package (issue 36; DESIGN §10 "Package") ----
# The version is the VERSION file's (Version.swift must say the same: VersionTests checks it); the
# Debian revision is that of the newest entry of contrib/debian/changelog, whose upstream part must
# be VERSION. `make deb` stages `make install DESTDIR=… PREFIX=/usr` in DEB_BUILD/debian/dropfetch and
# runs debhelper's tools one by one there (not dpkg-buildpackage, which would build from scratch,
# run `make test` and write into the parent folder): dh_installsysusers, dh_installtmpfiles and
# dh_installsystemd write the maintainer scripts as for any Debian daemon, dh_shlibdeps computes
# Depends:, dh_installdeb makes every file under /etc a conffile. The .deb goes to DEB_OUT.
VERSION_FILE := $(strip $(file < VERSION))
DEB_BUILD := .build/deb
DEB_OUT ?= .
DEB_PKGS := debhelper lintian dpkg-dev
DEB_ARCH = $(shell dpkg --print-architecture)
DEB_VERSION = $(shell dpkg-parsechangelog -l contrib/debian/changelog -S Version)
DEB_FILE = $(DEB_OUT)/dropfetch_$(DEB_VERSION)_$(DEB_ARCH).deb
# Docs keep their names (the units and the docs link to docs/service.md and the like): dh_compress
# compresses the man pages and the changelog only.
DEB_NO_COMPRESS := -X.md -X.png -Xconfig.example.yaml -X.conf -X.example -X.logrotate

deb-deps: install-deps
	@missing=""; \
	for p in $(DEB_PKGS); do \
	  case "$$(dpkg -s "$$p" 2>/dev/null || true)" in \
	    *"Status: install ok installed"*) ;; \
	    *) missing="$$missing $$p" ;; \
	  esac; \
	done; \
	$(install_missing)

deb: deb-deps release man completions
	@case "$(DEB_VERSION)" in \
	  "$(VERSION_FILE)"-*|"$(VERSION_FILE)") ;; \
	  *) echo "deb: contrib/debian/changelog is at $(DEB_VERSION), VERSION says $(VERSION_FILE)" >&2; exit 1 ;; \
	esac
	@v=$$($(RELEASE_BIN) --version); [ "$$v" = "$(VERSION_FILE)" ] || \
	  { echo "deb: dropfetch --version says $$v, VERSION says $(VERSION_FILE)" >&2; exit 1; }
	rm -rf $(DEB_BUILD) && mkdir -p $(DEB_BUILD)/debian
	cp contrib/debian/control contrib/debian/changelog contrib/debian/copyright contrib/debian/dropfetch.postrm contrib/debian/dropfetch.prerm \
	  $(DEB_BUILD)/debian/
	cp contrib/dropfetch.sysusers $(DEB_BUILD)/debian/dropfetch.sysusers
	cp contrib/dropfetch.tmpfiles $(DEB_BUILD)/debian/dropfetch.tmpfiles
	$(MAKE) --no-print-directory install DESTDIR=$(CURDIR)/$(DEB_BUILD)/debian/dropfetch PREFIX=/usr >/dev/null
	rm $(DEB_BUILD)/debian/dropfetch/usr/lib/sysusers.d/dropfetch.conf $(DEB_BUILD)/debian/dropfetch/usr/lib/tmpfiles.d/dropfetch.conf
	@# debhelper 13.11 (Debian 12) finds units in lib/systemd/system only; the package ships them in
	@# usr/lib/systemd/system (where deb-systemd-helper looks too): a link stands in while it runs.
	cd $(DEB_BUILD) && export SOURCE_DATE_EPOCH=$$(dpkg-parsechangelog -S Timestamp) && \
	  dh_installdocs && dh_installchangelogs && \
	  dh_installsysusers && dh_installtmpfiles && \
	  ln -s usr/lib debian/dropfetch/lib && \
	  dh_installsystemd dropfetch.service && \
	  dh_installsystemd --no-enable --no-start --restart-after-upgrade dropfetch-once.service dropfetch-once.timer dropfetch.path && \
	  rm debian/dropfetch/lib && \
	  dh_compress $(DEB_NO_COMPRESS) && dh_fixperms && dh_shlibdeps && dh_installdeb && dh_gencontrol && \
	  dh_md5sums && dh_builddeb --destdir=$(abspath $(DEB_OUT))
	@echo "built $(DEB_FILE)"
	lintian --fail-on error $(DEB_FILE)

# The package installed into a scratch root and checked: Tests/Install/check-deb.sh.
test-deb: deb
	Tests/Install/check-deb.sh $(DEB_FILE)

run: build
	./.build/debug/dropfetch run $(ARGS)

# Fails when a test fails, and also when Swift Testing printed no summary line (no tests ran).
test: test-deps
	$(SWIFT) build --build-tests
	@mkdir -p .build
	$(SWIFT) test --skip-build --disable-xctest --enable-swift-testing 2>&1 | tee $(TEST_LOG)
	@grep -Eq 'Test run with [0-9]+ tests? .*(passed|failed)' $(TEST_LOG) || \
	  { echo "make test: no Swift Testing summary line in the output" >&2; exit 1; }
	@$(MAKE) --no-print-directory test-tsan

# Fails when TSan wrote a report (printed here), when there is no summary line (a race in the test
# process itself ends it before the summary) and when a test fails. A test that fails with no
# report is one slowed past its timing by TSan (the plain suite has just passed it): the run is made
# once more, and fails only if it fails again; any report of either run fails it.
test-tsan: test-deps
	$(SWIFT) build --build-tests $(TSAN_FLAGS)
	@rm -rf $(TSAN_REPORTS) && mkdir -p $(TSAN_REPORTS)
	@status=0; \
	for run in 1 2; do \
	  status=0; \
	  env -u DROPFETCH_BIN TSAN_OPTIONS=$(TSAN_OPTIONS_RUN) $(SWIFT) test --skip-build $(TSAN_FLAGS) \
	    --disable-xctest --enable-swift-testing --skip '$(TSAN_SKIP)' 2>&1 | tee $(TSAN_LOG) || status=1; \
	  [ $$status = 0 ] && break; \
	  ls $(TSAN_REPORTS)/report.* >/dev/null 2>&1 && break; \
	  [ $$run = 1 ] && echo "make test-tsan: a test failed under ThreadSanitizer with no race reported; running the suites once more" >&2; \
	done; \
	for report in $(TSAN_REPORTS)/report.*; do \
	  [ -e "$$report" ] || continue; cat "$$report" >&2; \
	  echo "make test-tsan: ThreadSanitizer report in $$report" >&2; status=1; \
	done; \
	grep -Eq 'Test run with [0-9]+ tests? .*(passed|failed)' $(TSAN_LOG) || \
	  { echo "make test-tsan: no Swift Testing summary line in the output" >&2; status=1; }; \
	exit $$status

# GlusterFS server and FUSE client for test-distributed.
distributed-deps: deps
	@PATH="$$PATH:/usr/sbin:/sbin"; \
	missing=""; \
	command -v glusterd >/dev/null 2>&1 || missing="$$missing glusterfs-server"; \
	command -v mount.glusterfs >/dev/null 2>&1 || missing="$$missing glusterfs-client"; \
	$(install_missing)

# The Distributed suites on one GlusterFS volume mounted three times (the mounts stand in for hosts,
# the third cut off from the brick and healed by the split tests); `Tests/Distributed/gluster.sh
# preflight` says whether glusterd can run here and whether the split tests can (a network namespace).
test-distributed: distributed-deps
	$(SWIFT) build --build-tests
	SWIFT=$(SWIFT) Tests/Distributed/gluster.sh run

bench: bench-deps
	$(SWIFT) build $(RELEASE_FLAGS)
	bench/run.sh
	DROPFETCH_BIN=$(RELEASE_BIN) bench/instructions.sh

fuzz: deps
	Fuzz/run.sh $(FUZZ_TARGETS)

clean:
	$(SWIFT) package clean
