"""Drawing an audit sample, labelling it blind, importing labels, naming trusted labellers; each in one transaction.

One seeded simple random sample per batch (:func:`genderbias.machine.calibration_sample.random_sample`):
drawing again with its seed and a larger size extends it; another seed or a smaller size is refused,
as the labels given would then belong to no random sample.
"""

from __future__ import annotations

import csv
import secrets
from pathlib import Path

from django.contrib.auth import get_user_model
from django.core.exceptions import PermissionDenied
from django.db import IntegrityError, transaction
from django.utils import timezone

from annotation.audit.selectors import may_label, population_qids
from annotation.models import AuditItem, AuditSample, Batch
from core.errors import FieldError, StateError
from core.models import Membership
from core.selectors import group_of, require_role, role_in
from genderbias.crowd.audit_size import suggested_audit_size
from genderbias.errors import InputError
from genderbias.files.textfiles import csv_records, open_text
from genderbias.labels import LABELS, label_code

#: The optional header of an imported labels file.
IMPORT_HEADER = ("qid", "label")


def draw_audit_sample(
    batch: Batch, *, by=None, size: int | None = None, seed: int | None = None, expected_share: float = 0.5
) -> AuditSample:
    """Draw the batch's audit sample, or extend the one drawn. ``size`` default: the suggested size for
    ``expected_share``, at most the batch; ``seed`` default: a fresh one; ``by``: None for the operator."""
    if by is not None:
        require_role(by, batch, Membership.Role.RESEARCHER)
    if seed is not None and not 0 <= seed < 2**63:
        raise FieldError("seed", f"the seed must be a non-negative integer below 2**63, got {seed}")
    if size is not None and size < 1:
        raise FieldError("size", f"the size must be at least 1, got {size}")
    qids = population_qids(batch)
    if not qids:
        raise StateError(f"batch {batch.name} has no queries to audit")
    if size is None:
        try:
            size = min(len(qids), suggested_audit_size(expected_share))
        except ValueError as exc:
            raise FieldError("expected_share", str(exc)) from exc
    if size > len(qids):
        raise FieldError("size", f"the batch has {len(qids)} queries: a sample of {size} cannot be drawn")
    with transaction.atomic():
        Batch.objects.select_for_update().filter(pk=batch.pk).first()  # one draw of a batch at a time
        sample = AuditSample.objects.filter(batch=batch).first()
        if sample is None:
            try:
                with transaction.atomic():  # two first draws at once: the second is refused, not a 500
                    sample = AuditSample.objects.create(
                        batch=batch,
                        seed=secrets.randbits(32) if seed is None else seed,
                        size=0,
                        population=len(qids),
                        drawn_by=by if by is not None and by.is_authenticated else None,
                        drawn_at=timezone.now(),
                    )
            except IntegrityError:
                raise StateError(
                    f"batch {batch.name}'s audit sample is being drawn by someone else: try again"
                ) from None
        else:
            if seed is not None and seed != sample.seed:
                raise StateError(
                    f"batch {batch.name} has an audit sample drawn with seed {sample.seed}: it is extended "
                    "with that seed only (another seed would make the labelled queries no random sample)"
                )
            if size < sample.size:
                raise StateError(f"batch {batch.name}'s audit sample has {sample.size} queries: it never shrinks")
            if sample.population != len(qids):
                raise StateError(
                    f"batch {batch.name} had {sample.population} queries when its audit sample was drawn and has "
                    f"{len(qids)} now: the sample cannot be extended"
                )
        from genderbias.machine.calibration_sample import random_sample  # start-up

        drawn = random_sample(qids, size, seed=sample.seed)
        kept = list(sample.items.order_by("draw_index").values_list("batch_query__qid", flat=True))
        if drawn[: len(kept)] != kept:
            raise StateError(f"batch {batch.name}'s queries changed since its audit sample was drawn")
        ids = dict(batch.queries.filter(is_gold=False, qid__in=drawn[len(kept) :]).values_list("qid", "pk"))
        AuditItem.objects.bulk_create(
            AuditItem(sample=sample, batch_query_id=ids[qid], draw_index=index)
            for index, qid in enumerate(drawn[len(kept) :], start=len(kept))
        )
        sample.size = size
        sample.save(update_fields=["size"])
    return sample


def _sample_of(batch: Batch, *, labelled_by=False) -> AuditSample:
    """The batch's sample; ``labelled_by``: the user about to label it, refused unless they may."""
    sample = AuditSample.objects.filter(batch=batch).first()
    if sample is None:
        raise StateError(f"batch {batch.name} has no audit sample: draw one first")
    if labelled_by is not False and not may_label(labelled_by, sample):
        raise PermissionDenied("Only the batch's researchers and the labellers they trust label its audit sample.")
    return sample


def _set_label(item: AuditItem, code: str, *, by, name: str, owner: bool, now) -> bool:
    """Give ``item`` its label; a label already given changes only by its labeller or an owner, the old one kept."""
    if item.label == code:
        return False
    if item.label:
        if not (owner or (by is not None and item.labelled_by_id == by.pk)):
            raise PermissionDenied(
                f"{item.batch_query.qid} was labelled by {item.labeller_name or 'someone else'}: "
                "only they or an owner of the research group change it"
            )
        item.history = [
            *item.history,
            {
                "label": item.label,
                "labeller": item.labeller_name,
                "at": item.labelled_at.isoformat() if item.labelled_at else None,
                "changed_by": name,
                "changed_at": now.isoformat(),
            },
        ]
    item.label, item.labelled_by, item.labeller_name, item.labelled_at = code, by, name, now
    return True


def _is_owner(user, batch: Batch) -> bool:
    return user is None or user.is_superuser or role_in(user, group_of(batch)) == Membership.Role.OWNER


def label_audit_query(batch: Batch, qid: str, label: str, *, by=None) -> AuditItem:
    """Record ``by``'s expert label for the audited query ``qid`` (blind: nothing of the crowd is read here)."""
    sample = _sample_of(batch, labelled_by=by)
    code = label_code(label or "")
    if code is None:
        raise FieldError("label", f"unknown label {label!r}; use one of {', '.join(LABELS)}")
    with transaction.atomic():
        item = (
            AuditItem.objects.select_for_update()
            .filter(sample=sample, batch_query__qid=qid)
            .select_related("batch_query")
            .first()
        )
        if item is None:
            raise FieldError("qid", f"{qid!r} is not in batch {batch.name}'s audit sample")
        name = by.get_username() if by is not None else "operator"
        if _set_label(item, code, by=by, name=name, owner=_is_owner(by, batch), now=timezone.now()):
            item.save(update_fields=["label", "labelled_by", "labeller_name", "labelled_at", "history"])
    return item


def read_audit_labels(path: str | Path, *, name: str | None = None) -> list[tuple[int, str, str, str]]:
    """``(line, qid, label code, labeller)`` of a labels file: ``qid<TAB>label[<TAB>labeller]`` lines, or
    the same as CSV, with an optional header; bad input is ``file:line: problem`` (``name``: the file's
    name there). Unlike a labelled query file it carries no query text and may name the labeller."""
    path = Path(path)
    shown = name or str(path)
    if not path.is_file():
        raise InputError(shown, None, "labels file not found")
    rows: list[tuple[int, str, str, str]] = []
    seen: dict[str, int] = {}
    with open_text(path) as lines:
        csv_named = path.name.lower().endswith((".csv", ".csv.gz"))
        records = csv_records(path, lines) if csv_named else enumerate(lines, start=1)
        delimiter = "," if csv_named else None
        for number, line in records:
            if not line.strip():
                continue
            if delimiter is None:
                delimiter = "," if "\t" not in line and line.split(",")[:2] == list(IMPORT_HEADER) else "\t"
            fields = next(csv.reader([line], delimiter=",")) if delimiter == "," else line.split("\t")
            fields = [f.strip() for f in fields]
            if not rows and not seen and tuple(f.lower() for f in fields[:2]) == IMPORT_HEADER:
                seen[""] = number  # the header
                continue
            if len(fields) not in (2, 3):
                raise InputError(shown, number, f"expected qid, label[, labeller]: {len(fields)} fields")
            qid, value, labeller = fields[0], fields[1], fields[2] if len(fields) == 3 else ""
            if not qid:
                raise InputError(shown, number, "no qid")
            code = label_code(value)
            if code is None:
                raise InputError(shown, number, f"unknown label {value!r}; use one of {', '.join(LABELS)}")
            if qid in seen:
                raise InputError(shown, number, f"qid {qid!r} given twice (first on line {seen[qid]})")
            seen[qid] = number
            rows.append((number, qid, code, labeller))
    if not rows:
        raise InputError(shown, None, "no labels in the file")
    return rows


def import_audit_labels(batch: Batch, path: str | Path, *, by=None, name: str | None = None) -> int:
    """Import expert labels of the audited queries from a file, all or nothing, under the rules of
    :func:`label_audit_query`; a qid not in the sample is refused. The file's labeller, else the
    importer, is stored as who labelled. Returns how many labels were set or changed."""
    sample = _sample_of(batch, labelled_by=by)
    rows = read_audit_labels(path, name=name)
    shown = name or str(path)
    owner, now = _is_owner(by, batch), timezone.now()
    importer = by.get_username() if by is not None else "operator"
    with transaction.atomic():
        items = {
            item.batch_query.qid: item
            for item in AuditItem.objects.select_for_update().filter(sample=sample).select_related("batch_query")
        }
        changed = []
        for number, qid, code, labeller in rows:
            item = items.get(qid)
            if item is None:
                raise InputError(shown, number, f"qid {qid!r} is not in batch {batch.name}'s audit sample")
            try:
                if _set_label(item, code, by=by, name=labeller or importer, owner=owner, now=now):
                    changed.append(item)
            except PermissionDenied as exc:
                raise InputError(shown, number, str(exc)) from exc
        AuditItem.objects.bulk_update(changed, ["label", "labelled_by", "labeller_name", "labelled_at", "history"])
    return len(changed)


def trust_labeller(batch: Batch, username: str, *, by=None, trusted: bool = True) -> AuditSample:
    """Name (or, ``trusted=False``, un-name) a member of the batch's group as trusted to label its audit sample."""
    if by is not None:
        require_role(by, batch, Membership.Role.RESEARCHER)
    sample = _sample_of(batch)
    user = get_user_model().objects.filter(username=username).first()
    if user is None or role_in(user, group_of(batch)) is None:
        raise FieldError("username", f"{username!r} is no member of the research group of batch {batch.name}")
    with transaction.atomic():
        (sample.trusted.add if trusted else sample.trusted.remove)(user)
    return sample


__all__ = [
    "draw_audit_sample", "import_audit_labels", "label_audit_query", "read_audit_labels", "trust_labeller",
]  # fmt: skip
