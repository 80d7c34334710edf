"""What was handed in: the submissions of a folder, each one's package copied (or unpacked from a zip)
into a private folder within caps, its fingerprint, and what an instructor may want to look at in it."""

from __future__ import annotations

import hashlib
import os
import shutil
import stat
import time
import zipfile
from pathlib import Path

from transformer_course_tools import course
from transformer_course_tools.course import PACKAGE
from transformer_course_tools.exercises.answers import same_as_worked_solution
from transformer_course_tools.exercises.checks.registry import Exercise
from transformer_course_tools.exercises.regions import BEGIN

from .config import GradingConfig

SKIPPED = {"__pycache__", ".ipynb_checkpoints", ".pytest_cache", ".mypy_cache", ".ruff_cache"}
COURSE_SIDE = {"tools", "engine"}  # the package's folders that are the course's, not the learner's: never handed in


NOT_SUBMITTED = {".venv", "site-packages", "__MACOSX"}  # folders of a submission that hold no answer of its


class Refused(Exception):
    """A submission that is not graded at all; the message names what was wrong."""


def list_submissions(submissions_dir: Path) -> tuple[list[Path], list[tuple[str, str]]]:
    """The submissions (folders, ``.zip`` archives, and links, to be refused by name) and every other
    entry of ``submissions_dir``, with why it is left out."""
    if not submissions_dir.is_dir():
        raise FileNotFoundError(f"{submissions_dir} is not a folder of submissions")
    entries = sorted(submissions_dir.iterdir())
    folders = {p.name for p in entries if p.is_dir() and not p.is_symlink()}
    found, skipped = [], []
    for entry in entries:
        if entry.name.startswith((".", "_")):
            skipped.append((entry.name, "its name starts with '.' or '_' (hidden, or made by the system)"))
        elif entry.is_symlink() or entry.is_dir():
            found.append(entry)
        elif not is_archive(entry):
            skipped.append((entry.name, "neither a folder nor a .zip archive"))
        elif entry.stem in folders:
            skipped.append((entry.name, f"the folder {entry.stem}/ is graded instead"))
        else:
            found.append(entry)
    if not found:
        raise FileNotFoundError(f"{submissions_dir} holds no submission folders (one sub-folder or .zip per student)")
    return found, skipped


def is_archive(entry: Path) -> bool:
    return entry.suffix.lower() == ".zip" and not entry.is_symlink() and entry.is_file()


def student_name(entry: Path) -> str:
    """The student a submission belongs to: the folder's name, or the archive's without ``.zip``."""
    return entry.stem if is_archive(entry) else entry.name


def find_package(submission: Path) -> Path | None:
    """The submission's ``transformer_course`` package folder, or None.

    Accepts a whole edition (``alice/transformer_course/``), the package folder itself
    (``alice/`` holding ``__init__.py`` and the modules), or an edition nested up to three levels
    down (an unpacked archive: ``alice/course-main/transformer_course/``). Raises
    :class:`Refused` naming both where the submission holds two copies of the package.
    """
    top = [submission / PACKAGE] if (submission / PACKAGE).is_dir() else []
    nested = [
        p.parent
        for depth in ("*/", "*/*/", "*/*/*/")
        for p in submission.glob(f"{depth}{PACKAGE}/__init__.py")
        if not NOT_SUBMITTED & set(p.relative_to(submission).parts)
    ]
    found = sorted(set(top + nested), key=lambda p: (len(p.parts), str(p)))
    if len(found) > 1:
        where = [str(p.relative_to(submission.parent)) for p in found]
        raise Refused(f"the submission holds {len(found)} copies of the package ({' and '.join(where)}): hand in one")
    if found:
        return found[0]
    return submission if (submission / "__init__.py").is_file() else None


def unpack_archive(archive: Path, dest: Path, config: GradingConfig) -> Path:
    """Unpack a student's ``.zip`` into ``dest/<its name>/`` and return that folder. Only regular files
    and folders, within the same caps as a folder's package (``max_submission_mb``, ``max_files``, the
    bytes counted as they are inflated); what holds no answer (a ``.venv``, ``__MACOSX``, caches) is
    left out. Raises :class:`Refused` naming a link, a special file, a path leading outside the
    archive, an entry given twice, a cap, or an archive that cannot be read."""
    folder = dest / archive.stem
    folder.mkdir(parents=True, mode=0o755)
    budget = {"bytes": config.max_submission_mb * 2**20, "files": config.max_files}
    name = archive.name
    try:
        with zipfile.ZipFile(archive) as zipped:
            for info in zipped.infolist():
                name = f"{archive.name}: {info.filename}"
                parts = _archive_parts(info.filename, name)
                if not parts or (NOT_SUBMITTED | SKIPPED) & set(parts):
                    continue
                mode = info.external_attr >> 16
                if stat.S_ISLNK(mode):
                    raise Refused(f"{name} is a symbolic link; hand in plain files")
                if stat.S_IFMT(mode) and not (stat.S_ISREG(mode) or stat.S_ISDIR(mode)):
                    raise Refused(f"{name} is not a regular file or folder")
                target = folder.joinpath(*parts)
                if info.is_dir():
                    target.mkdir(parents=True, exist_ok=True)
                    continue
                budget["files"] -= 1
                target.parent.mkdir(parents=True, exist_ok=True)
                with zipped.open(info) as reader, open(target, "xb") as writer:
                    while chunk := reader.read(1 << 20):
                        budget["bytes"] -= len(chunk)
                        if budget["bytes"] < 0 or budget["files"] < 0:
                            raise Refused(f"{archive.name} unpacks to more than the caps ({config.max_submission_mb} "
                                          f"MB, {config.max_files} files; at {info.filename})")  # fmt: skip
                        writer.write(chunk)
                    if budget["files"] < 0:
                        raise Refused(f"{archive.name} holds more than {config.max_files} files (the cap)")
                stamp = time.mktime((*info.date_time, 0, 0, -1))  # the archive's time of the file, not now
                os.utime(target, (stamp, stamp))
    except FileExistsError:
        raise Refused(f"{name} is in the archive twice") from None
    except (zipfile.BadZipFile, zipfile.LargeZipFile, NotImplementedError, RuntimeError, EOFError, OSError,
            ValueError) as error:  # fmt: skip
        raise Refused(f"{name} could not be unpacked: {error}") from None
    readable(folder)
    return folder


def _archive_parts(filename: str, name: str) -> list[str]:
    """An archive entry's path as folder names, or Refused where it would lead outside the archive."""
    path = filename.replace("\\", "/")
    parts = [part for part in path.split("/") if part not in ("", ".")]
    if path.startswith("/") or (len(path) > 1 and path[1] == ":") or ".." in parts:
        raise Refused(f"{name} leads outside the archive: refused")
    return parts


def copy_package(student: Path, package: Path, dest: Path, config: GradingConfig) -> float | None:
    """Copy ``package`` (inside the folder ``student``) to ``dest``, readable by every user (a job
    may run as another uid). Only regular files and folders, within the size caps; the package's
    ``tools/`` and ``engine/`` (the course's machinery and inference engine) and caches are left
    out. Returns the newest file's modification time (None for an empty package). Raises :class:`Refused` naming a
    link, a special file, a path leading outside ``student`` or a cap."""
    if student.is_symlink():
        raise Refused(f"{student.name}/ is a symbolic link; hand in a folder")
    for parent in [package, *package.parents]:
        if parent == student:
            break
        if parent.is_symlink():
            raise Refused(f"{parent.relative_to(student.parent)} is a symbolic link (to {os.readlink(parent)})")
    if not package.resolve().is_relative_to(student.resolve()):
        raise Refused(f"the package resolves to {package.resolve()}, outside {student.name}/")
    budget = {"bytes": config.max_submission_mb * 2**20, "files": config.max_files}
    _copy_folder(package, dest, student.parent, budget, top=True)
    if budget["bytes"] < 0 or budget["files"] < 0:
        raise Refused(f"the package is larger than the caps ({config.max_submission_mb} MB, {config.max_files} files)")
    return budget.get("newest")


def _copy_folder(source: Path, dest: Path, base: Path, budget: dict, top: bool = False) -> None:
    dest.mkdir(mode=0o755)
    dest.chmod(0o755)
    with os.scandir(source) as entries:
        for entry in sorted(entries, key=lambda e: e.name):
            where = Path(entry.path).relative_to(base)
            if entry.name in SKIPPED or (top and entry.name in COURSE_SIDE):
                continue
            if entry.is_symlink():
                raise Refused(f"{where} is a symbolic link (to {os.readlink(entry.path)}); hand in plain files")
            if entry.is_dir(follow_symlinks=False):
                _copy_folder(Path(entry.path), dest / entry.name, base, budget)
            elif entry.is_file(follow_symlinks=False):
                _copy_file(Path(entry.path), dest / entry.name, where, budget)
            else:
                raise Refused(f"{where} is not a regular file or folder (a device, socket or pipe)")


def _copy_file(source: Path, dest: Path, where: Path, budget: dict) -> None:
    fd = os.open(source, os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0))
    with os.fdopen(fd, "rb") as reader:
        info = os.fstat(reader.fileno())
        if not stat.S_ISREG(info.st_mode):
            raise Refused(f"{where} is not a regular file")
        budget["files"] -= 1
        budget["bytes"] -= info.st_size
        budget["newest"] = max(budget.get("newest", 0.0), info.st_mtime)
        if budget["bytes"] < 0 or budget["files"] < 0:
            raise Refused(f"the package is larger than the caps (at {where})")
        with open(dest, "xb") as writer:
            shutil.copyfileobj(reader, writer)
    dest.chmod(0o644)


def readable(folder: Path) -> None:
    """Readable by every user (as root, a worker runs as another uid); writable by this one only."""
    for path in [folder, *folder.rglob("*")]:
        path.chmod(0o755 if path.is_dir() else 0o644)


def fingerprint(folder: Path) -> str:
    """A digest of every file below ``folder`` (names and contents): the same copy, the same digest."""
    digest = hashlib.sha256()
    for path in sorted(p for p in folder.rglob("*") if p.is_file()):
        digest.update(str(path.relative_to(folder)).encode() + b"\0" + path.read_bytes() + b"\0")
    return digest.hexdigest()


def provenance_flags(package: Path, wanted: list[Exercise]) -> list[str]:
    """What an instructor may want to look at in a copied package (flags, never a penalty): the
    solution markers of the complete edition, the backups ``restore`` leaves (``*.bak``), and the
    exercises whose function is, line for line, the complete edition's worked solution."""
    flags = []
    files = sorted(p for p in package.rglob("*") if p.is_file())
    marked = [p for p in files if p.suffix == ".py" and BEGIN in p.read_text(encoding="utf-8", errors="replace")]
    if marked:
        flags.append(f"solution markers ({BEGIN}) in {', '.join(p.relative_to(package).as_posix() for p in marked)}")
    backups = [p.relative_to(package).as_posix() for p in files if p.name.endswith(".bak")]
    if backups:
        flags.append(f"backups left by restore: {', '.join(backups)}")
    course_package = course.package_dir()
    for ex in wanted:
        room = ex.file.split("/", 1)[1]
        if same_as_worked_solution(package / room, course_package / room, ex.qualname):
            flags.append(f"{ex.id}: the same code as the worked solution")
    return flags
