"""Admin of the annotation app: read-only views of what the services made (they check what the admin's
generic forms cannot). Worker identities are visible to superusers only; everyone else sees pseudonyms.
"""

from django.contrib import admin

from annotation.models import (
    Assignment,
    Batch,
    BatchQuery,
    BonusPayment,
    Escalation,
    Export,
    Hit,
    Judgment,
    Worker,
    WorkerIdentity,
)


class ReadOnlyAdmin(admin.ModelAdmin):
    """View only: no add, change or delete (see the module docstring)."""

    def _refused(self, request, obj=None) -> bool:
        return False

    has_add_permission = has_change_permission = has_delete_permission = _refused


class HitInline(admin.TabularInline):
    model = Hit
    fields = ["position", "provider_id", "status", "max_assignments"]
    readonly_fields = fields
    extra = 0
    can_delete = False
    show_change_link = True


@admin.register(Batch)
class BatchAdmin(ReadOnlyAdmin):
    list_display = ["name", "provider", "status", "assignments_per_query", "queries_per_hit", "reward", "created"]
    list_filter = ["provider", "status"]
    search_fields = ["name"]
    readonly_fields = ["hit_type_id", "prepare_attempted", "cost", "created", "published"]
    inlines = [HitInline]


@admin.register(BatchQuery)
class BatchQueryAdmin(ReadOnlyAdmin):
    list_display = ["qid", "text", "batch", "is_gold", "gold_label"]
    list_filter = ["batch", "is_gold"]
    search_fields = ["qid", "text"]


@admin.register(Hit)
class HitAdmin(ReadOnlyAdmin):
    list_display = ["__str__", "provider_id", "status", "max_assignments"]
    list_filter = ["batch", "status"]
    readonly_fields = ["unique_token", "provider_id"]


class JudgmentInline(admin.TabularInline):
    model = Judgment
    fields = ["batch_query", "label", "invalid_reason"]
    readonly_fields = fields
    extra = 0
    can_delete = False


@admin.register(Assignment)
class AssignmentAdmin(ReadOnlyAdmin):
    list_display = ["provider_assignment_id", "hit", "worker", "status", "valid", "gold_passed", "submitted_at"]
    list_filter = ["status", "valid", "gold_passed", "hit__batch"]
    search_fields = ["provider_assignment_id", "worker__pseudonym"]
    readonly_fields = ["raw_answer"]
    inlines = [JudgmentInline]


@admin.register(Worker)
class WorkerAdmin(admin.ModelAdmin):
    list_display = ["pseudonym", "provider", "blocked", "created"]
    list_filter = ["provider", "blocked"]
    search_fields = ["pseudonym"]
    exclude = ["identity"]


@admin.register(WorkerIdentity)
class WorkerIdentityAdmin(admin.ModelAdmin):
    """Restricted: who is behind a pseudonym."""

    list_display = ["provider", "external_id", "user", "worker"]
    search_fields = ["external_id", "worker__pseudonym"]

    def _superuser(self, request, obj=None) -> bool:
        return request.user.is_superuser

    has_module_permission = has_view_permission = has_change_permission = _superuser
    has_add_permission = has_delete_permission = _superuser


admin.site.register(Escalation, ReadOnlyAdmin)
admin.site.register(Export, ReadOnlyAdmin)


@admin.register(BonusPayment)
class BonusPaymentAdmin(ReadOnlyAdmin):
    """Bonuses of every provider, read-only: the services record and pay them (docs/prolific.md)."""

    list_display = ["batch", "participant_id", "amount", "state", "bulk_id", "pay_attempted", "paid_at"]
    list_filter = ["state", "batch"]
