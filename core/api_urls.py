"""REST endpoints of the shared app."""

from rest_framework.routers import SimpleRouter

from core import api

router = SimpleRouter()
router.register("jobs", api.JobViewSet)

urlpatterns = router.urls
