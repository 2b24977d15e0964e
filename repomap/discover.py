"""Discovery: which files of a repository the engine indexes.

Inside git: ``git ls-files -co --exclude-standard`` (tracked + untracked, not
ignored). Outside git: a walk honouring every ``.gitignore`` it meets. Never
follows a symlink out of the root. Name/size based skips happen here; content
based skips (binary, minified, generated) happen in the indexer, which reads the
bytes anyway. Every skip is recorded by path and reason.

A tracked file deleted from the work tree (``git ls-files`` still lists it until
``git rm``) is simply not there: it is neither a file nor a skip. Each entry
carries the stat fields the cache's content shortcut keys on (see
:attr:`FileEntry.stat_key`), and the discovery records when it was taken, so a
file changed within the file system's timestamp granularity of that moment is
known to be "racy" (its stat cannot prove its content; see ``build.py``).
"""

from __future__ import annotations

import errno
import os
import stat
import time
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from durable_navigator.navtypes.errors import RepoError
from durable_navigator.repomap.config import DiscoverConfig
from durable_navigator.repomap.fsnames import display_name, is_utf8, round_trips
from durable_navigator.repomap.origin import origin_of
from durable_navigator.repomap.regular import read_regular
from durable_navigator.repomap.safepath import is_inside

if TYPE_CHECKING:
    import pathspec

__all__ = ["FileEntry", "Discovery", "discover", "git_commit", "check_root", "check_utf8_root", "RACY_WINDOW_NS", "SKIP_PATHS_PER_REASON",
           "skip_listing"]

_GIT_TIMEOUT_S = 60
#: a file whose mtime or ctime is this close to (or after) the moment it was
#: stat'ed may still change without changing its stat: timestamps are coarse
#: (a kernel tick locally, 1-2 s on FAT, HFS+ and some network file systems)
RACY_WINDOW_NS = 2_000_000_000
#: skipped paths a map's metadata (and so ``context.md`` and ``report.json``) lists per reason
SKIP_PATHS_PER_REASON = 15
#: git ignores a .gitignore larger than this (dir.c: PATTERN_MAX_FILE_SIZE); so does the walk
_GITIGNORE_MAX_BYTES = 100 * 1024 * 1024


@dataclass(frozen=True, slots=True)
class FileEntry:
    """A candidate file: POSIX relative path plus the stat fields the cache keys on."""

    path: str
    size: int
    mtime_ns: int
    #: inode change time: set by the kernel on every write, rename, chmod or ``utime``, so a
    #: copy that preserves mtimes (``cp -p``, ``rsync -a``, tar, reproducible archives) still
    #: changes it
    ctime_ns: int = 0
    ino: int = 0

    @property
    def stat_key(self) -> tuple[int, int, int, int]:
        """What must be unchanged for the cached content hash to be trusted."""
        return (self.size, self.mtime_ns, self.ctime_ns, self.ino)

    def racy(self, scanned_ns: int) -> bool:
        """Whether the file changed so close to ``scanned_ns`` that its stat proves nothing."""
        return max(self.mtime_ns, self.ctime_ns) >= scanned_ns - RACY_WINDOW_NS


@dataclass
class Discovery:
    """Discovered files (sorted by path) and skips by reason (counts and ``path -> reason``)."""

    root: Path
    files: list[FileEntry]
    skipped: Counter[str] = field(default_factory=Counter)
    git: bool = False
    skipped_paths: dict[str, str] = field(default_factory=dict)
    #: wall clock (ns) just before the first stat: the reference for :meth:`FileEntry.racy`
    scanned_ns: int = 0

    def skip(self, rel: str, reason: str) -> None:
        """Record that ``rel`` is not indexed, and why."""
        self.skipped[reason] += 1
        self.skipped_paths[rel] = reason


def skip_listing(skipped: dict[str, str], per_reason: int = SKIP_PATHS_PER_REASON
                 ) -> tuple[dict[str, str], dict[str, int]]:
    """The first ``per_reason`` paths of each reason (by path) and the count of every reason."""
    counts: Counter[str] = Counter()
    listed: dict[str, str] = {}
    for path, reason in sorted(skipped.items()):
        counts[reason] += 1
        if counts[reason] <= per_reason:
            listed[path] = reason
    return listed, dict(sorted(counts.items()))


def check_root(root: Path | str) -> Path:
    """The resolved root, or ``RepoError`` when it is missing, not a directory, or its path cannot be read.

    The one check of a repository path: ``repo-map``, the engine and every ``navigator`` surface
    (``cli.runinput.check_repository``) go through it, so each refuses a bad path with the same line.
    """
    text = str(root)
    # as typed when it is printable text; escaped when it holds control characters or non-UTF-8 bytes
    shown = text if text.isprintable() and text.encode("utf-8", "surrogatepass") == text.encode(
        "utf-8", "replace") else repr(text)
    if len(text) > 200:
        shown = f"{shown[:40]}… ({len(text):,} characters)"
    try:
        path = Path(root).expanduser()
        exists, is_dir = path.exists(), path.is_dir()
        resolved = path.resolve() if is_dir else path
    except (OSError, ValueError, RuntimeError) as exc:
        # ENAMETOOLONG, ELOOP, an embedded NUL: Path.exists() raises these rather than answering False
        # (RuntimeError: resolve()'s symlink loop)
        reason = exc.strerror if isinstance(exc, OSError) and exc.strerror else str(exc)
        raise RepoError(f"repository {shown} cannot be read ({reason}); pass the path of a checked-out "
                        "repository") from None
    if not exists:
        raise RepoError(f"repository {shown} does not exist; pass the path of a checked-out repository")
    if not is_dir:
        raise RepoError(f"{shown} is not a directory; pass the repository's root folder")
    check_utf8_root(resolved)
    return resolved


def check_utf8_root(resolved: Path) -> None:
    """Refuse a root whose real path is not valid UTF-8 (a Latin-1 ``café`` folder: byte ``\\xe9``).

    The root's path travels as text everywhere — the index cache, workflow inputs and history,
    ``report.json`` — and a name that is not UTF-8 cannot be encoded there (it failed deep inside
    with a ``UnicodeEncodeError`` traceback). Files *inside* the root with such names are fine
    (``fsnames``); the root itself must be renamed.
    """
    text = str(resolved)
    if is_utf8(text):
        return
    bad = next((part for part in resolved.parts if not is_utf8(part)), text)
    raise RepoError(f"repository path '{display_name(text)}' is not valid UTF-8 (the folder name "
                    f"'{display_name(bad)}'); rename that folder to a UTF-8 name (`mv`, or `convmv -f latin1 -t utf-8`) "
                    "or copy the repository to a path that is valid UTF-8")


def discover(root: Path, cfg: DiscoverConfig, exclude: Iterable[Path] = ()) -> Discovery:
    """List candidate files under ``root`` (already resolved) with stats.

    ``exclude``: directories never listed, like an ignored directory (the engine's own cache
    and state: exploring a tree that holds them, ``~`` say, must not index the index).
    """
    own = _excluded_prefixes(root, exclude)
    names = _git_ls_files(root)
    git = names is not None
    if names == [] and _git_ignores(root):
        # pointed at a directory its enclosing repository ignores (a vendored tree, an
        # installed stdlib under a git-managed prefix): index it with the plain walk
        git = False
    unreadable: list[str] = []
    if not git:
        names = _walk(root, cfg, unreadable, own)
    elif own:
        names = [n for n in names if not n.startswith(own)]
    disc = Discovery(root=root, files=[], git=git, scanned_ns=time.time_ns())
    for rel_dir in unreadable:
        disc.skip(display_name(rel_dir) + "/", "unreadable")
    lock = set(cfg.lockfile_names)
    # (display form, name on disk): a name that is not printable UTF-8 is listed escaped (fsnames)
    shown = sorted((display_name(n), n) for n in set(names))
    for rel, name in shown:
        reason = _name_skip(rel, lock, cfg) or (_display_skip(root, rel, name) if rel != name else None)
        if reason:
            disc.skip(rel, reason)
            continue
        entry = _stat_entry(root, rel, name, cfg, disc)
        if entry is not None:
            disc.files.append(entry)
    return disc


def _excluded_prefixes(root: Path, exclude: Iterable[Path]) -> tuple[str, ...]:
    """``rel/`` of each ``exclude`` directory inside ``root`` (``""`` when one is the root itself)."""
    out = []
    for d in exclude:
        real = Path(os.path.realpath(d))
        if is_inside(root, real):
            rel = real.relative_to(root).as_posix()
            out.append("" if rel == "." else rel + "/")
    return tuple(sorted(set(out)))


def _display_skip(root: Path, rel: str, name: str) -> str | None:
    """Why a file whose name is shown escaped (``fsnames``) cannot be listed under that form."""
    if not round_trips(name):
        return "undecodable_name"
    if os.path.lexists(f"{root}/{rel}"):
        return "name_clash"  # a file is literally named like this one's escaped form: it wins
    return None


def _name_skip(rel: str, lock: set[str], cfg: DiscoverConfig) -> str | None:
    base = rel.rsplit("/", 1)[-1]
    if base in lock:
        return "lockfile"
    if base.endswith((".min.js", ".min.css", ".min.mjs")) or ".bundle." in base:
        return "minified"
    if any(part in cfg.skip_dirs for part in rel.split("/")[:-1]):
        return "ignored_dir"
    return None


def _stat_entry(root: Path, rel: str, name: str, cfg: DiscoverConfig, disc: Discovery) -> FileEntry | None:
    """The entry of ``rel`` (``name`` on disk), or None after recording why it is skipped."""
    full = f"{root}/{name}"  # a str, not a Path: path objects cost more than the lstat on big trees
    try:
        st = os.lstat(full)
    except FileNotFoundError:
        return None  # listed by git's index, deleted from the work tree: not part of the tree
    except OSError:
        disc.skip(rel, "unreadable")
        return None
    try:
        if stat.S_ISLNK(st.st_mode):
            # realpath, not Path.resolve: the latter raises RuntimeError on a loop (Python < 3.13)
            target = Path(os.path.realpath(full))
            if not is_inside(root, target):
                disc.skip(rel, "symlink_escape")
                return None
            st = os.stat(full)
        if not stat.S_ISREG(st.st_mode):
            disc.skip(rel, "not_regular")
            return None
    except OSError as exc:
        disc.skip(rel, "symlink_loop" if exc.errno == errno.ELOOP else
                  "dangling_symlink" if stat.S_ISLNK(st.st_mode) and isinstance(exc, FileNotFoundError)
                  else "unreadable")
        return None
    if st.st_size > cfg.max_file_bytes:
        disc.skip(rel, "oversized")
        return None
    return FileEntry(rel, st.st_size, st.st_mtime_ns, st.st_ctime_ns, st.st_ino)


def _git_ls_files(root: Path) -> list[str] | None:
    """Paths from git, or None when ``root`` is not inside a git work tree."""
    if not _inside_git(root):
        return None
    import subprocess  # only inside a git work tree: a plain folder never loads it

    try:
        proc = subprocess.run(
            ["git", "-C", str(root), "ls-files", "-co", "--exclude-standard", "-z"],
            capture_output=True, timeout=_GIT_TIMEOUT_S, check=False,
        )
    except (OSError, subprocess.TimeoutExpired):
        return None
    if proc.returncode != 0:
        return None
    return [p for p in proc.stdout.decode("utf-8", "surrogateescape").split("\0") if p]


def _git_ignores(root: Path) -> bool:
    """Whether the enclosing repository's ignore rules exclude ``root`` itself."""
    import subprocess  # only inside a git work tree: a plain folder never loads it

    try:
        proc = subprocess.run(["git", "-C", str(root), "check-ignore", "-q", "."],
                              capture_output=True, timeout=_GIT_TIMEOUT_S, check=False)
    except (OSError, subprocess.TimeoutExpired):
        return False
    return proc.returncode == 0


def _inside_git(root: Path) -> bool:
    probe = root
    while True:
        if (probe / ".git").exists():
            return True
        if probe.parent == probe:
            return False
        probe = probe.parent


def git_commit(root: Path) -> str | None:
    """HEAD's commit (short), or None outside git / in a repository without commits.

    A tree outside git may be a snapshot of a git work tree: its recorded origin answers (``origin``).
    """
    if not _inside_git(root):
        origin = origin_of(root)
        return origin.commit if origin is not None else None
    import subprocess  # only inside a git work tree: a plain folder never loads it

    try:
        proc = subprocess.run(["git", "-C", str(root), "rev-parse", "--short=12", "HEAD"],
                              capture_output=True, timeout=_GIT_TIMEOUT_S, check=False, text=True)
    except (OSError, subprocess.TimeoutExpired):
        return None
    return proc.stdout.strip() or None if proc.returncode == 0 else None


def _walk(root: Path, cfg: DiscoverConfig, unreadable: list[str], own: tuple[str, ...] = ()) -> list[str]:
    """Gitignore-aware walk (nested .gitignore files apply below their directory).

    A directory that cannot be listed is appended to ``unreadable`` (its files are
    unknown, so the directory itself is what gets skipped with a reason).

    ``os.scandir`` with relative paths built by string concatenation: on trees
    with tens of thousands of directories ``os.walk`` + ``relpath`` -- or even
    ``pathlib`` joins -- cost more than the I/O. The caller sorts the result, so
    directories are read in any order. Symlinked directories are not descended
    (their files could leave the root), nor the ``own`` (excluded) ones.
    """
    out: list[str] = []
    if "" in own:
        return out
    skip = set(cfg.skip_dirs)
    base = f"{root}/"
    stack: list[tuple[str, list[tuple[str, pathspec.PathSpec]]]] = [("", [])]
    while stack:
        rel_dir, specs = stack.pop()
        try:
            with os.scandir(base + rel_dir) as it:
                entries = list(it)
        except OSError:
            if rel_dir:
                unreadable.append(rel_dir[:-1])
            continue
        if any(e.name == ".gitignore" for e in entries):
            try:
                # as git reads it: a regular file only (a FIFO would block the walk forever, a symlink
                # could point out of the root or at /dev/zero), at most git's own size limit
                data = read_regular(base + rel_dir + ".gitignore", follow_symlinks=False,
                                    limit=_GITIGNORE_MAX_BYTES + 1)
                if len(data) <= _GITIGNORE_MAX_BYTES:
                    lines = data.decode("utf-8", "replace").splitlines()
                    specs = [*specs, (rel_dir, _gitignore_spec(lines))]
            except OSError:
                pass  # not applied; the name itself is listed and lstat says why it is skipped
        for e in entries:
            rel = rel_dir + e.name
            try:
                is_dir = e.is_dir(follow_symlinks=False)
            except OSError:
                is_dir = False  # listed as a file: its lstat says why it is skipped
            if is_dir:
                if e.name not in skip and rel + "/" not in own and not _ignored(specs, rel + "/"):
                    stack.append((rel + "/", specs))
            elif not _ignored(specs, rel):
                out.append(rel)
    return out


def _gitignore_spec(lines: list[str]) -> "pathspec.PathSpec":
    """A .gitignore's patterns as git applies them: a line git cannot use (a lone ``!`` or a trailing
    backslash; pathspec refuses the whole file for it) is skipped, the others keep their order."""
    import pathspec  # only trees with .gitignore files outside git need it

    try:
        return pathspec.GitIgnoreSpec.from_lines(lines)
    except ValueError:
        pass
    kept = []
    for line in lines:
        try:
            pathspec.GitIgnoreSpec.from_lines([line])
        except ValueError:
            continue
        kept.append(line)
    return pathspec.GitIgnoreSpec.from_lines(kept)


def _ignored(specs: list[tuple[str, pathspec.PathSpec]], rel: str) -> bool:
    return any(rel.startswith(d) and s.match_file(rel[len(d):]) for d, s in specs)
