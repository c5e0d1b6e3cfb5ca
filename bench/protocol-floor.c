// The file-system work the spool contract (docs/spool.md) asks of each small job, timed alone, with no
// download and no agent: the floor under any implementation of it, beside what curl does per file.
// Usage: protocol-floor MODE DIR N (DIR: a folder to create; N jobs of 16 KiB). Prints one line:
// `floor mode=MODE jobs=N seconds=S us_per_job=U`.
//   curl       the output file created, written, closed: all curl does per file.
//   spool      the finish protocol at its cheapest (folder descriptors, no checks): the job file
//              read in the inbox and claimed by rename into work/; the .part created exclusively,
//              written, renamed to its final name; the status written under a temp name, renamed
//              into done/; the job file renamed beside it.
//   spoolsync  the same with fsync: true, batched the cheapest way the order allows (16 jobs a
//              batch, one syncfs(2) for each step of a batch, not an fsync a file): data synced
//              before the parts are renamed, statuses synced before they are renamed, folders after.
//   checks     spool plus the checks and records dropfetch adds to each job (fsync off), as system
//              calls with nothing computed: the job file's fstat, the claimed file's inode looked up,
//              the destination looked up, the part's fstat, flock and by-name lookup, its owner mark
//              set and removed, the job file's inode and its done/ name looked up before filing, and
//              a line each to the filing journal and the done index. What dropfetch costs beyond
//              this is its own computing (user space) and the wake-ups between it and the server.
#define _GNU_SOURCE
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <sys/xattr.h>

enum { BATCH = 16 };
static char data[16384], status[640], job[96];

/// The names one job's files go by.
struct names { char job[32], part[32], final[32], temp[40], record[40]; };

static void name_job(int i, struct names *n) {
    snprintf(n->job, sizeof n->job, "j%d.url", i);
    snprintf(n->part, sizeof n->part, ".f%d.bin.part", i);
    snprintf(n->final, sizeof n->final, "f%d.bin", i);
    snprintf(n->temp, sizeof n->temp, ".j%d.status.json.tmp", i);
    snprintf(n->record, sizeof n->record, "j%d.status.json", i);
}

static double now(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec + t.tv_nsec / 1e9;
}

static void check(int ok, const char *what) {
    if (!ok) { perror(what); exit(1); }
}

static int folder(int at, const char *name) {
    check(mkdirat(at, name, 0755) == 0, name);
    int fd = openat(at, name, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    check(fd >= 0, name);
    return fd;
}

static void put(int at, const char *name, const char *bytes, size_t size, int fd_out[1]) {
    int fd = openat(at, name, O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
    check(fd >= 0 && write(fd, bytes, size) == (ssize_t)size, name);
    if (fd_out) *fd_out = fd; else close(fd);
}

int main(int argc, char **argv) {
    if (argc != 4) { fprintf(stderr, "usage: protocol-floor curl|spool|spoolsync|checks DIR N\n"); return 2; }
    const char *mode = argv[1];
    int n = atoi(argv[3]), spool = strcmp(mode, "curl") != 0, durable = strcmp(mode, "spoolsync") == 0;
    int checks = strcmp(mode, "checks") == 0, journal = -1, index = -1;
    struct stat info;
    static const char mark[31] = "owner mark: job, claim, MAC...";
    int root = folder(AT_FDCWD, argv[2]);
    int inbox = folder(root, "inbox"), work = folder(root, "work"), done = folder(root, "done"), out = folder(root, "out");
    memset(data, 'x', sizeof data);
    memset(status, 's', sizeof status);
    struct names names;
    for (int i = 0; spool && i < n; i++) {
        name_job(i, &names);
        put(inbox, names.job, job, (size_t)snprintf(job, sizeof job, "http://127.0.0.1/small/f%d.bin\n  out=f%d.bin\n", i, i), NULL);
    }
    syncfs(root);
    double start = now();
    if (checks) {
        journal = openat(root, ".filings", O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
        index = openat(root, ".done-urls", O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
        check(journal >= 0 && index >= 0, "journal");
    }
    for (int first = 0; first < n; first += BATCH) {
        int last = first + BATCH < n ? first + BATCH : n, parts[BATCH];
        for (int i = first; i < last; i++) {
            name_job(i, &names);
            if (!spool) { put(out, names.final, data, sizeof data, NULL); continue; }
            int fd = openat(inbox, names.job, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
            check(fd >= 0 && read(fd, job, sizeof job) > 0, names.job);
            if (checks) fstat(fd, &info);
            close(fd);
            check(renameat2(inbox, names.job, work, names.job, RENAME_NOREPLACE) == 0, "claim");
            if (checks) {
                fstatat(work, names.job, &info, AT_SYMLINK_NOFOLLOW);
                check(fstatat(out, names.final, &info, AT_SYMLINK_NOFOLLOW) != 0, "destination");
                int part = openat(out, names.part, O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
                check(part >= 0 && fstat(part, &info) == 0 && flock(part, LOCK_EX | LOCK_NB) == 0, names.part);
                fstatat(out, names.part, &info, AT_SYMLINK_NOFOLLOW);
                check(fsetxattr(part, "user.dropfetch.owner", mark, sizeof mark, 0) == 0, "owner mark");
                check(write(part, data, sizeof data) == sizeof data, names.part);
                parts[i - first] = part;
                continue;
            }
            put(out, names.part, data, sizeof data, &parts[i - first]);
        }
        if (!spool) continue;
        if (durable) syncfs(root);
        for (int i = first; i < last; i++) {
            name_job(i, &names);
            check(renameat2(out, names.part, out, names.final, RENAME_NOREPLACE) == 0, "publish");
            if (checks) check(fremovexattr(parts[i - first], "user.dropfetch.owner") == 0, "owner mark");
            close(parts[i - first]);
            put(work, names.temp, status, sizeof status, NULL);
        }
        if (durable) syncfs(root);
        for (int i = first; i < last; i++) {
            name_job(i, &names);
            if (checks) {
                fstatat(work, names.job, &info, AT_SYMLINK_NOFOLLOW);
                check(fstatat(done, names.job, &info, AT_SYMLINK_NOFOLLOW) != 0, "done name");
            }
            check(renameat2(work, names.temp, done, names.record, RENAME_NOREPLACE) == 0, "status");
            check(renameat2(work, names.job, done, names.job, RENAME_NOREPLACE) == 0, "file");
            if (checks) {
                char line[96] = {0};
                check(write(journal, line, (size_t)snprintf(line, sizeof line, "1795946766473150200 d %s\n", names.job)) > 0 &&
                      write(index, line, 40) == 40, "journal");
            }
        }
        if (durable) syncfs(root);
    }
    double seconds = now() - start;
    printf("floor mode=%s jobs=%d seconds=%.3f us_per_job=%.1f\n", mode, n, seconds, seconds / n * 1e6);
    return 0;
}
