"""The unshare backend's inside step (:mod:`.sandbox`): the first process of the new namespaces.

It runs as root in a new user namespace (or as real root), with only the standard library: it
builds the job's file system on a fresh tmpfs and makes it the root, drops every privilege, runs
the job, reaps orphans as pid 1, and exits with the job's status. ``sandbox.py`` starts it by path,
``python -I -S sandbox_inside.py SPEC``; it never imports anything later.
"""

from __future__ import annotations

import ctypes
import json
import os
import platform
import resource
import sys
import warnings  # noqa: F401 - os.execvp imports it lazily, after the new root has hidden the standard library
from functools import cache

PR_SET_PDEATHSIG, _PR_CAPBSET_DROP, _PR_SET_NO_NEW_PRIVS = 1, 24, 38
_MS_RDONLY, _MS_NOSUID, _MS_NODEV, _MS_NOEXEC = 1, 2, 4, 8
_MS_REMOUNT, _MS_BIND, _MS_REC, _MS_PRIVATE = 32, 4096, 16384, 1 << 18
_MNT_DETACH = 2
# Flags the kernel may lock on a mount seen from a user namespace; a remount must repeat them.
# (os.ST_* and the MS_* flags have the same values on Linux.)
_KEEP_FLAGS = os.ST_NOSUID | os.ST_NODEV | os.ST_NOEXEC | os.ST_NOATIME | os.ST_NODIRATIME | os.ST_RELATIME
# glibc has no pivot_root(): the system call's number per architecture.
PIVOT_ROOT = {"x86_64": 155, "aarch64": 41, "riscv64": 41, "ppc64le": 203, "s390x": 217}.get(platform.machine())
_DEV_NODES = ("null", "zero", "full", "random", "urandom")


@cache
def libc() -> ctypes.CDLL:
    return ctypes.CDLL(None, use_errno=True)


def _sys(result: int, what: str) -> None:
    if result != 0:
        number = ctypes.get_errno()
        raise OSError(number, f"{what}: {os.strerror(number)}")


def _mount(source: str | None, target: str, fstype: str | None, flags: int, data: str | None = None) -> None:
    def arg(text: str | None) -> bytes | None:
        return None if text is None else os.fsencode(text)

    result = libc().mount(arg(source), arg(target), arg(fstype), ctypes.c_ulong(flags), arg(data))
    _sys(result, f"mount {source or ''} on {target}")


def _bind(source: str, target: str, *, readonly: bool, devices: bool = False) -> None:
    """Bind ``source`` at ``target`` (created), then remount it read-only and nosuid (nodev unless devices)."""
    if os.path.isdir(source):
        os.makedirs(target, exist_ok=True)
    else:
        os.makedirs(os.path.dirname(target), exist_ok=True)
        open(target, "a").close()
    _mount(source, target, None, _MS_BIND)  # not recursive: mounts below source stay hidden
    flags = _MS_REMOUNT | _MS_BIND | _MS_NOSUID | (os.statvfs(target).f_flag & _KEEP_FLAGS)
    flags |= (_MS_RDONLY if readonly else 0) | (0 if devices else _MS_NODEV)
    _mount(None, target, None, flags)


def _build_root(ops: list[list[str]], cwd: str) -> None:
    """Build the sandbox's file system on a fresh tmpfs and make it the root, the old one detached."""
    os.umask(0o022)
    _mount(None, "/", None, _MS_REC | _MS_PRIVATE)  # nothing we mount may reach the host's namespace
    # Open every source first: the new root is mounted over /tmp, which could hide some of them.
    sources = {src: os.open(src, os.O_PATH | os.O_CLOEXEC) for kind, src, _ in ops if kind in ("ro", "rw")}
    new_root = "/tmp"
    _mount("tmpfs", new_root, "tmpfs", _MS_NOSUID | _MS_NODEV, "size=1m,mode=0755")
    for kind, src, dst in ops:
        target = new_root + dst
        if kind in ("ro", "rw"):  # /proc/self/fd/N is the opened source (the host's /proc is still here)
            _bind(f"/proc/self/fd/{sources[src]}", target, readonly=kind == "ro")
        elif kind == "symlink":
            os.makedirs(os.path.dirname(target), exist_ok=True)
            os.symlink(src, target)
        elif kind == "tmpfs":
            os.makedirs(target, exist_ok=True)
            _mount("tmpfs", target, "tmpfs", _MS_NOSUID | _MS_NODEV, f"size={src},mode=1777")
        elif kind == "proc":
            os.makedirs(target, exist_ok=True)
            _mount("proc", target, "proc", _MS_NOSUID | _MS_NODEV | _MS_NOEXEC)
        elif kind == "dev":  # a minimal /dev: a few harmless devices and the usual links
            os.makedirs(target, exist_ok=True)
            _mount("tmpfs", target, "tmpfs", _MS_NOSUID | _MS_NOEXEC, "size=64k,mode=0755")
            for name in _DEV_NODES:
                _bind(f"/dev/{name}", f"{target}/{name}", readonly=False, devices=True)
            for name, link in (("fd", "/proc/self/fd"), ("stdin", "/proc/self/fd/0")):
                os.symlink(link, f"{target}/{name}")
            os.symlink("/proc/self/fd/1", f"{target}/stdout")
            os.symlink("/proc/self/fd/2", f"{target}/stderr")
            _mount(None, target, None, _MS_REMOUNT | _MS_RDONLY | _MS_NOSUID | _MS_NOEXEC)
    for fd in sources.values():
        os.close(fd)
    _mount(None, new_root, None, _MS_REMOUNT | _MS_RDONLY | _MS_NOSUID | _MS_NODEV)
    # pivot_root, not chroot: with the old root detached there is nothing left to escape to, even for a
    # job that makes its own user namespace (and so gets CAP_SYS_CHROOT back).
    os.chdir(new_root)
    _sys(libc().syscall(PIVOT_ROOT, b".", b"."), "pivot_root")
    _sys(libc().umount2(b".", _MNT_DETACH), "detach the old root")
    os.chdir(cwd)


def _drop_privileges(uid: int | None, nproc: int) -> None:
    """Leave the job no way to undo the sandbox: no capabilities, no set-uid gains, a process limit."""
    _sys(libc().prctl(_PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0), "no_new_privs")
    resource.setrlimit(resource.RLIMIT_NPROC, (nproc, nproc))
    if uid is not None:  # real root: become an ordinary user, which clears every capability
        os.setgroups([])
        os.setgid(uid)
        os.setuid(uid)
        return
    # Root of our own user namespace: an empty bounding set means the job's exec grants no capability.
    cap = 0
    while libc().prctl(_PR_CAPBSET_DROP, cap, 0, 0, 0) == 0:
        cap += 1
    if cap == 0 or ctypes.get_errno() != 22:  # EINVAL marks the end of the list; anything else is a failure
        raise OSError(ctypes.get_errno(), "could not drop capabilities")


def _inside(spec: dict) -> None:
    """First process of the new namespaces: build the root, drop privileges, run the job, reap, exit."""
    status = spec["status_fd"]
    os.set_inheritable(status, False)  # the job must not inherit the grader's status pipe
    # Our pid as the grader sees it (/proc is still the host's), in bwrap's format: the grader kills us
    # by it on a timeout.
    os.write(status, f'{{"child-pid": {os.readlink("/proc/self")}}}\n'.encode())
    try:
        _build_root(spec["ops"], spec["cwd"])
        _drop_privileges(spec["uid"], spec["nproc"])
    except OSError as error:
        print(f"sandbox: {error}", file=sys.stderr, flush=True)
        os._exit(125)
    argv = spec["argv"]
    job = os.fork()
    if job == 0:
        try:
            os.setsid()
            os.execvp(argv[0], argv)
        except OSError as error:  # like a shell (and prlimit under bwrap): 127 not found, 126 not runnable
            print(f"sandbox: cannot run {argv[0]}: {error.strerror}", file=sys.stderr, flush=True)
            os._exit(127 if isinstance(error, FileNotFoundError) else 126)
    while True:  # as pid 1 we also reap orphans, so they stop counting against the process limit
        pid, wait_status = os.wait()
        if pid == job:
            break
    code = os.waitstatus_to_exitcode(wait_status)
    code = code if code >= 0 else 128 - code
    os.write(status, f'{{"exit-code": {code}}}\n'.encode())
    os._exit(code)  # the kernel now kills whatever is left in the pid namespace


if __name__ == "__main__":
    try:
        _inside(json.loads(sys.argv[1]))
    except Exception as error:  # one line for the grader's probe and messages, never a traceback
        print(f"sandbox: {type(error).__name__}: {error}", file=sys.stderr, flush=True)
        os._exit(125)
