"""The index root of a store: its folders, confinement below it, and its writers' lock.

:class:`StoreRoot` is the part of :class:`~lakesieve.store.IndexStore` that
knows paths, not the log: nothing the store reads, writes or deletes may
resolve outside the root or pass through a symbolic link below it, and
writers hold the root's lock (:mod:`lakesieve.store.lock`) while they work.
"""

from __future__ import annotations

import os
import shutil
import stat
from contextlib import AbstractContextManager
from pathlib import Path

from lakesieve.errors import IndexCorruptError, IndexNotFoundError
from lakesieve.store.index_log import DATA_DIR, check_name
from lakesieve.store.lock import LOCK_FILE, store_lock
from lakesieve.store.log_swap import LOG_DIR, settle


class StoreRoot:
    """The folders of one index root, and safe ways to reach and remove what is below it.

    Args:
        root: the index root folder (``<table>/.lakesieve`` by default).
    """

    #: whether the root is on object storage (:mod:`lakesieve.store.object_index`)
    remote = False

    def __init__(self, root: str | os.PathLike[str]) -> None:
        self.root = Path(root)
        self.log_dir = self.root / LOG_DIR
        self.data_dir = self.root / DATA_DIR

    def confined(self, path: Path) -> Path:
        """Return ``path`` if it lies under the root and no part below the root is a link.

        Parts that do not exist yet are fine (nothing can redirect them).

        Raises:
            IndexCorruptError: the path leaves the root or passes through a symbolic link.
        """
        try:
            rel = path.relative_to(self.root)
        except ValueError:
            raise IndexCorruptError(f"path {path} is outside the index root {self.root}") from None
        if ".." in rel.parts:
            raise IndexCorruptError(f"path {path} escapes the index root {self.root}")
        current = self.root
        for part in rel.parts:
            current = current / part
            try:
                mode = os.lstat(current).st_mode
            except FileNotFoundError:
                break
            except OSError as exc:
                raise IndexCorruptError(f"index path {current} cannot be checked: {exc}") from exc
            if stat.S_ISLNK(mode):
                raise IndexCorruptError(
                    f"index path {current} is a symbolic link; lakesieve never follows links in {self.root}"
                )
        return path

    def log_names(self) -> list[str]:
        """The names in the log folder (``[]`` when there is no log).

        A ``_log`` missing because a repair's log swap was interrupted is put
        in place first (:func:`lakesieve.store.log_swap.settle`), and so is one a
        running repair moves aside between that check and the listing (the
        listing is then tried again): a reader never fails on a swap.

        Raises:
            IndexCorruptError: ``_log`` is missing beside repair leftovers that
                cannot be settled here: not an empty store (repair fixes it);
                or it vanished each time it was listed.
        """
        for _ in range(3):
            if not self.log_dir.is_dir():
                if self.log_dir == self.root / LOG_DIR:
                    settle(self.root, self.log_dir)
                if not self.log_dir.is_dir():
                    return []
            try:
                with os.scandir(self.log_dir) as entries:
                    return [entry.name for entry in entries]
            except FileNotFoundError:  # moved aside after the check: settle and list again
                continue
        raise IndexCorruptError(f"the index log {self.log_dir} vanished each time it was listed")

    def check_layout(self) -> None:
        """Refuse a root whose ``_log`` or ``data`` folder is a symbolic link.

        Raises:
            IndexCorruptError: one of them is a link.
        """
        self.confined(self.log_dir)
        self.confined(self.data_dir)

    def remove_tree(self, path: Path) -> bool:
        """Delete a folder under the root without following any link; ``False`` if it was refused.

        A folder reached through a link, or that is one, is left alone; links
        inside it are removed as links (their targets are never touched).
        """
        try:
            self.confined(path)
            if not stat.S_ISDIR(os.lstat(path).st_mode):
                return False
        except (IndexCorruptError, OSError):
            return False
        shutil.rmtree(path, ignore_errors=True)
        return not os.path.lexists(path)

    def remove_state_folder(self, index: str, state_id: str) -> bool:
        """Delete ``data/<index>/<state id>`` (both plain names) and all in it."""
        try:
            check_name(index, "index name")
            check_name(state_id, "state id")
        except IndexNotFoundError:
            return False
        return self.remove_tree(self.data_dir / index / state_id)

    def writing(
        self, exclusive: bool = False, create: bool = False, probe: bool = True
    ) -> AbstractContextManager[None]:
        """Hold the root's writers' lock (exclusively for a repair) while the block runs.

        Args:
            exclusive: keep every other writer out (``lakesieve index repair``).
            create: make the root first when it does not exist (a first build).
            probe: also check that the root, ``_log`` and ``data`` can be written.

        Raises:
            StoreBusyError: a repair holds the store (for ``exclusive``: a writer does).
            StoreWriteError: the root cannot be written (read-only, full, forbidden).
        """
        self.confined(self.root / LOCK_FILE)
        folders = (self.root, self.log_dir, self.data_dir) if probe else ()
        return store_lock(self.root, exclusive=exclusive, create=create, probe=folders)
