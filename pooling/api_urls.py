"""REST endpoints of the pooling app."""

urlpatterns: list = []
