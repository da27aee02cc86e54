"""import_run's errors are command errors (file and problem), never a traceback."""

from pathlib import Path

import pytest
from django.core.management.base import CommandError

from pooling.models import Collection
from tests.pooling.test_services_and_commands import run


@pytest.mark.django_db
def test_a_collection_changed_since_its_import_is_a_command_error(own_world, tmp_path):
    """The collection's docids are prepared once for every run file; preparing them can fail
    (the file changed since it was imported) and must say so as the import of a run would."""
    collection = Collection.objects.get(name="tiny")
    Path(collection.docid_index).unlink()  # the cache cleared, so the file is read again
    Path(own_world["collection"]).write_text("d1\tsomething else entirely, and longer than before\n")
    path = tmp_path / "r.trec"
    path.write_text("1 Q0 d1 1 2 t\n")
    with pytest.raises(CommandError, match="changed since it was imported"):
        run("import_run", str(path), name="new", collection="tiny")
