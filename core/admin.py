from django.contrib import admin

from .models import Job


@admin.register(Job)
class JobAdmin(admin.ModelAdmin):
    """Progress records are written by the work they follow; the admin only reads them."""

    list_display = ["pk", "kind", "status", "description", "created"]
    list_filter = ["kind", "status"]

    def has_add_permission(self, request) -> bool:
        return False

    def has_change_permission(self, request, obj=None) -> bool:
        return False
