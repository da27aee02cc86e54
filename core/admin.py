from django.contrib import admin

from core.models import ApiToken, Job, Lease


@admin.register(Job)
class JobAdmin(admin.ModelAdmin):
    """Progress records are written by the work they follow; the admin only reads them."""

    list_display = ["pk", "kind", "status", "description", "created"]
    list_filter = ["kind", "status"]

    def has_add_permission(self, request) -> bool:
        return False

    def has_change_permission(self, request, obj=None) -> bool:
        return False


@admin.register(Lease)
class LeaseAdmin(admin.ModelAdmin):
    """Who is publishing or syncing what. Deleting a lease frees it for a holder that is gone."""

    list_display = ["key", "purpose", "hostname", "pid", "acquired", "expires"]

    def has_add_permission(self, request) -> bool:
        return False

    def has_change_permission(self, request, obj=None) -> bool:
        return False


@admin.register(ApiToken)
class ApiTokenAdmin(admin.ModelAdmin):
    """Who has an API token and until when; never its key, its lookup characters or its digest.
    Tokens are made where their key can be shown once (the Token page, ``manage.py api_token``);
    deleting one here revokes it."""

    list_display = ["user", "created", "expires"]
    fields = ["user", "created", "expires"]
    readonly_fields = fields
    search_fields = ["user__username"]

    def has_add_permission(self, request) -> bool:
        return False

    def has_change_permission(self, request, obj=None) -> bool:
        return False
