from django.contrib import admin

from core.models import ApiToken, Job, Lease


class _ReadOnly(admin.ModelAdmin):
    """Rows written by the work they follow: the admin reads and deletes them, never adds or changes."""

    def has_add_permission(self, request) -> bool:
        return False

    def has_change_permission(self, request, obj=None) -> bool:
        return False


@admin.register(Job)
class JobAdmin(_ReadOnly):
    list_display = ["pk", "kind", "status", "description", "created"]
    list_filter = ["kind", "status"]


@admin.register(Lease)
class LeaseAdmin(_ReadOnly):
    """Who is publishing or syncing what. Deleting a lease frees it for a holder that is gone."""

    list_display = ["key", "purpose", "hostname", "pid", "acquired", "expires"]


@admin.register(ApiToken)
class ApiTokenAdmin(_ReadOnly):
    """Who has an API token and until when, never its key or digest (made where the key can be shown
    once); deleting one here revokes it."""

    list_display = ["user", "created", "expires"]
    fields = ["user", "created", "expires"]
    readonly_fields = fields
    search_fields = ["user__username"]
