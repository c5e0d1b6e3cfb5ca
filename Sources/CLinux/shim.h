#include <sys/signalfd.h>
#include <sys/inotify.h>
#include <sys/statvfs.h>
#include <sys/vfs.h>
#include <sys/eventfd.h>
#include <sys/file.h>
#include <sys/xattr.h>
#include <signal.h>
#include <errno.h>

/// errno as a function: Swift cannot read the thread-local macro portably.
static inline int dfl_errno(void) { return errno; }
#include <sys/syscall.h>
#include <unistd.h>
#include <fcntl.h>

/// renameat2(2) with RENAME_NOREPLACE through syscall(2): glibc only declares it under _GNU_SOURCE.
static inline int dfl_rename_noreplace(int olddirfd, const char *oldpath, int newdirfd, const char *newpath) {
    return (int)syscall(SYS_renameat2, olddirfd, oldpath, newdirfd, newpath, 1u /* RENAME_NOREPLACE */);
}

/// open(2) with a mode: Swift cannot call the variadic open.
static inline int dfl_openat(int dirfd, const char *path, int flags, unsigned mode) {
    return openat(dirfd, path, flags, (mode_t)mode);
}

/// sync_file_range(2) with SYNC_FILE_RANGE_WRITE: starts writeback of a range without waiting, so
/// that a later fdatasync finds little left to do (glibc declares it only under _GNU_SOURCE).
static inline int dfl_start_writeback(int fd, long long offset, long long length) {
    return (int)syscall(SYS_sync_file_range, fd, offset, length, 2u /* SYNC_FILE_RANGE_WRITE */);
}

/// syncfs(2): the whole file system of `fd` written back and committed (glibc declares it only
/// under _GNU_SOURCE).
static inline int dfl_syncfs(int fd) {
    return (int)syscall(SYS_syncfs, fd);
}

/// sync_file_range(2) with SYNC_FILE_RANGE_WAIT_BEFORE | WRITE | WAIT_AFTER over the whole file:
/// after a syncfs, nothing is left to write, and the call reports the file's own writeback errors
/// since this descriptor last looked (file_fdatawait_range, errseq), without a journal commit.
static inline int dfl_wait_writeback(int fd) {
    return (int)syscall(SYS_sync_file_range, fd, 0LL, 0LL, 7u);
}

#include <sys/resource.h>

/// setpriority(2) of the calling thread alone (Linux keeps a nice value per thread).
static inline int dfl_set_thread_nice(int nice) {
    return setpriority(PRIO_PROCESS, (id_t)syscall(SYS_gettid), nice);
}

#include <sched.h>

/// SCHED_BATCH for the calling thread (sched_setscheduler(2) with pid 0 acts on the caller alone):
/// the scheduler does not let it preempt others when it wakes up (glibc names it under _GNU_SOURCE).
static inline int dfl_set_thread_batch(void) {
    struct sched_param param = { .sched_priority = 0 };
    return sched_setscheduler(0, 3 /* SCHED_BATCH */, &param);
}

#include <spawn.h>

/// posix_spawn_file_actions_addclosefrom_np(3), glibc 2.34+: the child closes every descriptor
/// from `from` up (close_range(2), or a walk of /proc/self/fd) just before exec. glibc declares
/// it only under _GNU_SOURCE, so it is declared here.
extern int posix_spawn_file_actions_addclosefrom_np(posix_spawn_file_actions_t *actions, int from);
static inline int dfl_spawn_addclosefrom(posix_spawn_file_actions_t *actions, int from) {
    return posix_spawn_file_actions_addclosefrom_np(actions, from);
}

#include <sys/random.h>

/// getrandom(2) from the kernel's pool (blocks only before it is first seeded at boot).
static inline long dfl_getrandom(void *buffer, unsigned long length) {
    return (long)syscall(SYS_getrandom, buffer, length, 0u);
}

#include <malloc.h>

/// mallopt(3): blocks below `mmap_from` bytes come from the heap, and up to `trim_from` bytes of freed heap are kept.
static inline void dfl_keep_freed_heap(int mmap_from, int trim_from) {
    mallopt(M_MMAP_THRESHOLD, mmap_from);
    mallopt(M_TRIM_THRESHOLD, trim_from);
}
