"""Leases: one holder at a time, takeover of expired or dead holders, re-entrance."""

import subprocess
import sys
from datetime import timedelta

import pytest
from django.utils import timezone

from core.models import Lease
from core.services import leases


@pytest.mark.django_db
def test_a_second_caller_is_told_who_holds_the_lease():
    held = r"A sync of batch 'b' is already under way \(since .* process \d+"
    with leases.exclusive("k", "A sync of batch 'b'"), pytest.raises(leases.LeaseHeld, match=held):
        leases.acquire("k", "another sync")
    assert not Lease.objects.exists()  # released
    owner = leases.acquire("k", "again")
    leases.release("k", owner)


@pytest.mark.django_db
def test_reentrant_within_a_thread():
    with leases.exclusive("k", "outer"), leases.exclusive("k", "inner"):
        assert Lease.objects.get().purpose == "outer"
    assert not Lease.objects.exists()


@pytest.mark.django_db
def test_an_expired_lease_is_taken_over_and_the_old_owner_cannot_release_it():
    old = leases.acquire("k", "stuck", ttl=timedelta(seconds=-1))
    new = leases.acquire("k", "fresh")
    assert new != old and Lease.objects.get().purpose == "fresh"
    leases.release("k", old)  # a late release by the old holder frees nothing
    assert Lease.objects.get().owner == new


@pytest.mark.django_db
def test_a_lease_of_a_dead_process_on_this_host_is_taken_over():
    gone = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True, text=True)
    owner = leases.acquire("k", "killed with -9")
    Lease.objects.filter(key="k").update(pid=int(gone.stdout))
    assert leases.acquire("k", "next") != owner


@pytest.mark.django_db
def test_a_live_holder_elsewhere_is_respected_until_expiry():
    leases.acquire("k", "on another machine")
    Lease.objects.filter(key="k").update(hostname="elsewhere", pid=1, expires=timezone.now() + timedelta(hours=1))
    with pytest.raises(leases.LeaseHeld):
        leases.acquire("k", "here")
