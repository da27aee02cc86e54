"""State shared by every app: research groups and their scope, the progress record of long work, leases, API tokens."""

from __future__ import annotations

from django.conf import settings
from django.core.exceptions import PermissionDenied
from django.db import connection, models
from django.db.models import sql
from django.db.models.expressions import RawSQL
from django.utils import timezone

from core.db import scope as _scope
from core.db.prepared import Prepared
from core.errors import ServiceError

#: The group a site starts with: the migration puts every existing study and staff account in it.
DEFAULT_GROUP_SLUG = "default"
_SAFE_METHODS = frozenset({"GET", "HEAD", "OPTIONS", "TRACE"})


class ResearchGroup(models.Model):
    """A research group: its studies and its members, who act by role (:class:`Membership`) and see
    nothing of another group (:class:`GroupScopedManager`)."""

    name = models.CharField(max_length=200, unique=True)
    slug = models.SlugField(max_length=50, unique=True)
    created = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["pk"]

    def __str__(self) -> str:
        return self.name


class Membership(models.Model):
    """A user's role in a research group: viewer reads; researcher also creates and acts; owner also
    manages members. An annotator answers the group's batches and sees nothing else."""

    class Role(models.TextChoices):
        OWNER = "owner"
        RESEARCHER = "researcher"
        VIEWER = "viewer"
        ANNOTATOR = "annotator"

    user = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="research_memberships")
    group = models.ForeignKey(ResearchGroup, on_delete=models.CASCADE, related_name="memberships")
    role = models.CharField(max_length=12, choices=Role.choices)
    created = models.DateTimeField(auto_now_add=True)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["user", "group"], name="one_membership_per_research_group")]

    def __str__(self) -> str:
        return f"{self.user} ({self.role} of {self.group})"


#: Roles by what they may do: rank for "at least" (annotators rank with no researcher's role).
ROLE_RANK = {Membership.Role.VIEWER: 1, Membership.Role.RESEARCHER: 2, Membership.Role.OWNER: 3}
#: Roles whose requests may change state (an annotator submits answers; a viewer changes nothing).
_WRITE_ROLES = frozenset({Membership.Role.OWNER, Membership.Role.RESEARCHER, Membership.Role.ANNOTATOR})


def default_group() -> ResearchGroup:
    """The site's first group, made on first ask on a site without any (a new database)."""
    group = ResearchGroup.objects.order_by("pk").first()
    if group is None:
        group, _ = ResearchGroup.objects.get_or_create(slug=DEFAULT_GROUP_SLUG, defaults={"name": "Default group"})
    return group


def _groups_with_roles_query(user_id: int):
    role = Membership.objects.filter(user_id=user_id, group=models.OuterRef("pk")).values("role")[:1]
    return ResearchGroup.objects.annotate(role=models.Subquery(role)).values_list("pk", "role")


#: Asked on every request that reads a study model: compiled once (``core.db.prepared``).
_prepared_groups_with_roles = Prepared(_groups_with_roles_query, scope=None)


#: The column :func:`group_roles_column` adds to a user's row, and its marker when not read.
GROUP_ROLES = "research_group_roles"
_NOT_READ = object()


def group_roles_column(user_id_sql: str):
    """The user's role in every research group, as one text column of the user's own statement:
    ``"3:owner,5:"`` (group 3 as owner, group 5 not a member; ``NULL``: no group at all).

    ``user_id_sql`` is the SQL naming the user's id in the outer statement (its column, quoted).
    Read with the session's user (``annotation.accounts``), the request's scope costs no statement.
    """
    quote = connection.ops.quote_name
    groups, members = quote(ResearchGroup._meta.db_table), quote(Membership._meta.db_table)
    text_of_id = "CAST(g.id AS TEXT)"
    joined = f"{text_of_id} || ':' || COALESCE(m.role, '')"
    aggregate = f"string_agg({joined}, ',')" if connection.vendor == "postgresql" else f"group_concat({joined}, ',')"
    sql = (
        f"(SELECT {aggregate} FROM {groups} g LEFT JOIN {members} m ON m.group_id = g.id AND m.user_id = {user_id_sql})"
    )
    return RawSQL(sql, (), output_field=models.TextField(null=True))


def _parse_group_roles(text: str | None) -> list[tuple[int, str | None]]:
    pairs = []
    for item in text.split(",") if text else ():
        pk, _, role = item.partition(":")
        pairs.append((int(pk), role or None))
    return sorted(pairs)


def roles_of(user) -> dict[int, str]:
    """``{group id: role}`` of ``user``: their memberships; on a site with at most one group, a staff
    account without any is owner of it (a site with one group works as before groups existed)."""
    return _roles_and_groups(user)[0]


def _roles_and_groups(user, *, read_with_user: bool = False) -> tuple[dict[int, str], frozenset[int]]:
    """``(`` :func:`roles_of` ``, every group's id)`` in one query; ``read_with_user``: from the user's own
    statement when it read them (:func:`group_roles_column`)."""
    if user is None or not user.is_authenticated:
        return {}, frozenset()
    text = getattr(user, GROUP_ROLES, _NOT_READ) if read_with_user else _NOT_READ
    groups = _prepared_groups_with_roles(user_id=user.pk) if text is _NOT_READ else _parse_group_roles(text)
    every = frozenset(pk for pk, _ in groups)
    if user.is_superuser:
        return dict.fromkeys(every or [default_group().pk], Membership.Role.OWNER), every
    roles = {pk: role for pk, role in groups if role is not None}
    if not roles and user.is_staff and len(groups) <= 1:
        roles = {default_group().pk: Membership.Role.OWNER}
    return roles, every


def scope_of() -> frozenset[int] | None:
    """The ids of the groups the current request, command or job sees; ``None``: every group.

    A request sees its user's groups (without viewer roles when it may change state: a viewer's
    POST finds nothing to act on); superusers and visitors (whose pages guard themselves) are not
    scoped; an account of no group sees nothing; a command with ``--group`` sees that group.
    One read per request, kept on the request.
    """
    acting = _scope.acting_group.get()
    if acting is not None and acting[1]:
        return frozenset({acting[0]})
    request = _scope.current_request.get()
    if request is None:
        return None
    user = getattr(request, "user", None)
    if user is None or not user.is_authenticated or user.is_superuser:
        return None
    write = request.method not in _SAFE_METHODS
    cache = request.__dict__.setdefault("_group_scope", {})
    if user.pk not in cache:
        cache[user.pk] = _roles_and_groups(user, read_with_user=True)
    roles, every = cache[user.pk]
    ids = frozenset(g for g, role in roles.items() if not write or role in _WRITE_ROLES)
    return None if every and ids >= every else ids


def creation_group() -> ResearchGroup:
    """The group a new study object goes to: the acting group, else the user's chosen group
    (:func:`chosen_group_id`) or their first where they may create, else the site's first group.
    A user with no group where they may create is refused (403)."""
    acting = _scope.acting_group.get()
    if acting is not None:
        return ResearchGroup.objects.get(pk=acting[0])
    request = _scope.current_request.get()
    if request is None and ResearchGroup.objects.count() > 1:
        raise ServiceError("this site has several research groups: say which with --group")
    user = getattr(request, "user", None) if request is not None else None
    if user is None or not user.is_authenticated or not (user.is_staff or user.is_superuser):
        return default_group()
    allowed = [
        g for g, role in roles_of(user).items() if ROLE_RANK.get(role, 0) >= ROLE_RANK[Membership.Role.RESEARCHER]
    ]
    if not allowed:
        raise PermissionDenied("You are a viewer only: you have no research group where you may create.")
    chosen = chosen_group_id(request)
    return ResearchGroup.objects.get(pk=chosen if chosen in allowed else min(allowed))


def group_id_by_slug(slug: str) -> int | None:
    """The id of the research group named ``slug`` (``None``: no such group)."""
    return ResearchGroup.objects.filter(slug=slug).values_list("pk", flat=True).first()


def chosen_group_id(request) -> int | None:
    """The group the requesting user chose to work in: the API's ``X-Research-Group`` header (a
    group's slug) or the session's choice (the groups page)."""
    slug = request.headers.get("X-Research-Group", "") if hasattr(request, "headers") else ""
    if slug:
        return group_id_by_slug(slug)
    session = getattr(request, "session", None)
    chosen = session.get("research_group") if session is not None else None
    return chosen if isinstance(chosen, int) else None


def _scope_lookup(model: type[models.Model], scope: frozenset[int]) -> dict:
    """The filter narrowing ``model`` to ``scope``: a root on its ``group``, a part through ``scope_via``
    as a subquery of its owner's scoped manager (no join: ``select_for_update`` locks this model only)."""
    via = getattr(model, "scope_via", None)  # a class attribute: related managers take no arguments
    if via is None:
        return {"group_id__in": scope}
    owner = model._meta.get_field(via).related_model
    return {f"{via}__in": owner._default_manager.values("pk")}


class GroupScopedQuery(sql.Query):
    """A study model's SQL query, narrowed to the current scope when compiled, not when built: a
    queryset made at import (an API view's ``queryset``) is narrowed afresh each time it runs."""

    _narrowed = False

    def get_compiler(self, using=None, connection=None, elide_empty=True):
        scope = None if self._narrowed or self._trimmed_to_another_table() else scope_of()
        if scope is None:
            return super().get_compiler(using, connection, elide_empty)
        narrowed = self.clone()
        narrowed._narrowed = True
        narrowed.add_q(models.Q(**_scope_lookup(self.model, scope)))
        return narrowed.get_compiler(using, connection, elide_empty)

    def _trimmed_to_another_table(self) -> bool:
        """Whether this is the inner query of an ``exclude()`` across a relation, trimmed to start at
        the related table: narrowing it would write invalid SQL, and the outer query is narrowed."""
        if not self.alias_map:
            return False
        base = self.base_table  # trim_start unrefs the model's own table and starts at the related one
        return self.alias_refcount.get(base, 1) == 0 or self.alias_map[base].table_name != self.model._meta.db_table


class GroupScopedQuerySet(models.QuerySet):
    """A study model's queryset, read within the current scope (:class:`GroupScopedQuery`); an
    UPDATE and a DELETE (queries of their own classes) are narrowed too."""

    def __init__(self, model=None, query=None, using=None, hints=None) -> None:
        super().__init__(model, query if query is not None else GroupScopedQuery(model), using, hints)

    def narrowed(self) -> GroupScopedQuerySet:
        """These rows within the current scope, as a filter of their own (for UPDATE and DELETE)."""
        scope = scope_of()
        return self if scope is None else self.filter(**_scope_lookup(self.model, scope))

    def update(self, **kwargs):
        return super(GroupScopedQuerySet, self.narrowed()).update(**kwargs)

    update.alters_data = True

    def delete(self):
        # A fast delete becomes a DELETE query of its own: narrowed here too.
        return super(GroupScopedQuerySet, self.narrowed()).delete()

    delete.alters_data = True
    delete.queryset_only = True


class GroupScopedManager(models.Manager.from_queryset(GroupScopedQuerySet)):
    """The default manager of every study model: only what the current scope (:func:`scope_of`) sees."""


class GroupOwned(models.Model):
    """A study's root object: it belongs to one research group, given at creation (:func:`creation_group`)."""

    group = models.ForeignKey(ResearchGroup, on_delete=models.PROTECT, null=True, blank=True, related_name="+")

    objects = GroupScopedManager()

    class Meta:
        abstract = True

    #: False: made without a group where no group can be told (a Job a scheduled command starts on a
    #: site with several groups: seen by superusers only), rather than refused.
    group_required = True

    #: Fields naming an object whose group a new one takes (a derived batch: its parent's).
    group_from: tuple[str, ...] = ()

    def save(self, *args, **kwargs) -> None:
        for name in self.group_from if self.group_id is None else ():
            owner = getattr(self, name, None)
            if owner is not None and owner.group_id is not None:
                self.group_id = owner.group_id
                break
        if self.group_id is None:
            try:
                self.group = creation_group()
            except ServiceError:
                if self.group_required:
                    raise
        super().save(*args, **kwargs)


class Job(GroupOwned):
    """Progress record of long work, for pages to poll; it belongs to the group of the study object
    it works on (``start_job(of=...)``), and its work runs acting in that group."""

    group_required = False

    class Status(models.TextChoices):
        PENDING = "pending"
        RUNNING = "running"
        DONE = "done"
        FAILED = "failed"

    kind = models.CharField(max_length=50)
    status = models.CharField(max_length=10, choices=Status.choices, default=Status.PENDING)
    description = models.CharField(max_length=500, blank=True)
    total = models.BigIntegerField(null=True)
    done = models.BigIntegerField(default=0)
    message = models.TextField(blank=True)
    result = models.JSONField(default=dict, blank=True)
    created = models.DateTimeField(auto_now_add=True)
    updated = models.DateTimeField(auto_now=True)
    # How the work is delivered (core.tasks): enough for the sweeper to send it again.
    task = models.CharField(max_length=200, blank=True)
    arguments = models.JSONField(default=list, blank=True)
    message_id = models.CharField(max_length=64, blank=True)
    queued = models.DateTimeField(null=True, blank=True)
    attempts = models.PositiveIntegerField(default=0)
    worker = models.CharField(max_length=200, blank=True)
    heartbeat = models.DateTimeField(null=True, blank=True)
    # Who asked for it, when a request did: the bound on jobs in flight counts per user (core.jobs.admit).
    started_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.SET_NULL, null=True, blank=True, related_name="+"
    )

    class Meta:
        ordering = ["-created"]

    def __str__(self) -> str:
        return f"{self.kind} #{self.pk} ({self.status})"

    @property
    def redelivered(self) -> bool:
        """Whether an earlier delivery claimed this job and died: its work may be partly or wholly done."""
        return self.attempts > 1

    @property
    def fraction(self) -> float | None:
        if not self.total:
            return None
        return min(1.0, self.done / self.total)


class Lease(models.Model):
    """A named exclusive right to do some work, held by one process at a time (see ``core.services.leases``)."""

    key = models.CharField(max_length=200, primary_key=True)
    owner = models.CharField(max_length=32, help_text="Random token of the holder; release and takeover compare it.")
    purpose = models.CharField(max_length=200)
    hostname = models.CharField(max_length=255)
    pid = models.IntegerField()
    acquired = models.DateTimeField()
    expires = models.DateTimeField()

    def __str__(self) -> str:
        return f"{self.key} ({self.purpose}, {self.hostname}:{self.pid})"


class ApiToken(models.Model):
    """A researcher's API token, one per account, kept only as the SHA-256 digest of its key (shown
    once, when made); ``lookup`` finds the row, then the digest is compared in constant time."""

    user = models.OneToOneField(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="api_token")
    lookup = models.CharField(max_length=8, db_index=True, help_text="The key's first characters, to find the row.")
    digest = models.CharField(max_length=64, unique=True, help_text="SHA-256 of the key (hex).")
    created = models.DateTimeField(auto_now_add=True)
    expires = models.DateTimeField(null=True, blank=True, help_text="Empty: never.")

    class Meta:
        verbose_name = "API token"

    def __str__(self) -> str:
        return f"API token of {self.user}"

    def expired(self, now=None) -> bool:
        return self.expires is not None and self.expires <= (now or timezone.now())


class CacheEntry(models.Model):
    """What one entry of a bounded cache weighs, so the code enforces its bound on any backend
    (:mod:`core.db.bounded_cache`)."""

    cache = models.CharField(max_length=40)
    key = models.CharField(max_length=1000)
    bytes = models.BigIntegerField()
    #: What the entry belongs to (``batch-17``) and the version it was computed for: storing
    #: another version of the generation removes this one (stale, e.g. older answers).
    generation = models.CharField(max_length=200, blank=True)
    version = models.CharField(max_length=200, blank=True)
    stored = models.DateTimeField(default=timezone.now)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["cache", "key"], name="cache_entry_unique_key")]
        indexes = [
            models.Index(fields=["cache", "stored"], name="cache_entry_age"),
            models.Index(fields=["cache", "generation"], name="cache_entry_generation"),
        ]

    def __str__(self) -> str:
        return f"{self.cache}:{self.key} ({self.bytes:,} bytes)"


class Connection(models.Model):
    """An outside service's connection as stored on the site (``core.connection_kinds``): ``values``
    the plain fields, ``sealed`` the secret ones sealed with ``CONNECTIONS_KEY`` (:mod:`core.sealing`),
    so no secret is held in clear; ``last_test`` is the Job of its latest test.
    """

    kind = models.CharField(max_length=40, unique=True)
    values = models.JSONField(default=dict, blank=True)
    sealed = models.TextField(blank=True)
    updated = models.DateTimeField(auto_now=True)
    updated_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    last_test = models.ForeignKey(Job, null=True, blank=True, on_delete=models.SET_NULL, related_name="+")

    def __str__(self) -> str:
        return f"connection {self.kind}"


class ChangelogAcknowledgement(models.Model):
    """The newest CHANGELOG.md entry a staff user has acknowledged: the home page lists the newer ones
    once, until they acknowledge them (:func:`core.services.changelog.acknowledge_changelog`)."""

    user = models.OneToOneField(
        settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="changelog_acknowledgement"
    )
    heading = models.CharField(max_length=300, help_text="The acknowledged entry's heading (its key).")
    acknowledged = models.DateTimeField(auto_now=True)

    def __str__(self) -> str:
        return f"{self.user} acknowledged {self.heading}"
