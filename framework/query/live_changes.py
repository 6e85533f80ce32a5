"""A format's change record checked against what the two snapshots hold.

A format plugin's ``changes`` hook reads change records: Iceberg manifest
entry statuses, Delta's add and remove actions, Hudi's commit metadata. Some
writers set them in ways the spec does not allow (an Iceberg overwrite whose
new files carry ``EXISTING`` and whose deleted entries keep the adding
snapshot's id), and a record that says less than what happened would make a
stale index look complete: a read would lose rows.

So the framework never takes a change record alone. :func:`checked_changes`
compares the read units of the two snapshots (what is live at each, as the
format lists it for a read) and corrects the record:

- ``added`` is every location live at ``end`` and not at ``start``;
  ``removed`` every location live at ``start`` and not at ``end``;
- a location live at both is ``rewritten`` when the record touches it or
  when its unit differs (another base file, log files, delete files or
  partition values);
- a location the record touches that neither snapshot holds (added and
  removed inside the range) stays ``removed``.

The refinements of rewritten locations (``updated_in_place``, ``stamped``,
``change_images``, ``written_in_logs``, ``rows_written``) are claims about
the whole range made from the same records; where the record disagrees with
the snapshots in any way they are dropped, and those locations are read whole.
"""

from __future__ import annotations

from dataclasses import replace

from lakesieve.model import Changes, ReadUnit, Snapshot


def unit_signature(unit: ReadUnit) -> tuple[object, ...]:
    """What a read of ``unit`` depends on: its files and partition values."""
    return (
        unit.base_file,
        tuple(unit.log_files),
        tuple(sorted(unit.delete_files)),
        tuple(sorted(unit.partition_values.items())),
    )


def _signatures(snapshot: Snapshot) -> dict[str, set[tuple[object, ...]]]:
    out: dict[str, set[tuple[object, ...]]] = {}
    for unit in snapshot.units:
        out.setdefault(unit.location, set()).add(unit_signature(unit))
    return out


def checked_changes(reported: Changes, old: Snapshot, new: Snapshot) -> Changes:
    """``reported`` corrected by the live units of ``old`` (at ``start``) and ``new`` (at ``end``).

    ``old`` is the snapshot at ``reported.start`` (empty for ``None``) and
    ``new`` the one at ``reported.end``; the direction follows them, as the
    hook's does: from ``start`` moving to ``end``.
    """
    before, after = _signatures(old), _signatures(new)
    added = frozenset(after.keys() - before.keys())
    removed_live = frozenset(before.keys() - after.keys())
    both = before.keys() & after.keys()
    touched = reported.touched
    differing = {loc for loc in both if before[loc] != after[loc]}
    rewritten = frozenset((touched & both) | differing)
    gone = frozenset(touched - before.keys() - after.keys())
    removed = removed_live | gone
    agrees = (
        added == reported.added
        and removed == reported.removed
        and rewritten == reported.rewritten
        and differing <= reported.rewritten
    )
    if agrees:
        return reported
    return replace(
        reported,
        added=added,
        removed=removed,
        rewritten=rewritten,
        updated_in_place=frozenset(),
        stamped=frozenset(),
        change_images={},
        written_in_logs=frozenset(),
        rows_written={},
    )
