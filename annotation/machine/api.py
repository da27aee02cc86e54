"""REST endpoints of machine pre-labelling (researchers only), as on the batch's machine-labels pages.

- ``POST /api/annotation/batches/<name>/prelabel/`` ``{labeller, samples?, train?}``: pre-label
  as a background job (202, poll the job);
- ``GET /api/annotation/batches/<name>/prelabels/``: each stored run;
- ``GET /api/annotation/prelabel-cache/``: the chat labeller's cached answers per model and
  prompt version; ``DELETE /api/annotation/prelabel-cache/<model>/`` (``?prompt_version=``
  for one version) forgets a model's (the model as a ``<key:...>`` segment: ``/`` is ``~2F``);
  404 when nothing of it is cached;
- ``POST /api/annotation/batches/<name>/calibration-sample/`` ``{sample, labeller?, seed?,
  publish?, extend?}``: the blind sample as a batch of its own, published unless ``publish`` is
  false (201); 409 while the batch has one, unless ``extend`` (a further draw that continues it);
- ``GET /api/annotation/batches/<name>/calibration/``: the calibration report (409 until the
  sample has enough crowd labels), computed by a background job: 202 with the job until it is kept;
- ``POST /api/annotation/batches/<name>/calibration/echo/`` ``{worker, restore, reason?}``: restore a
  worker the echo check flagged (their sample answers count in the reference after all) or hold them
  out again; answers the sample's echo check as it now stands (400 naming ``worker`` when the check
  does not flag them, 409 holding out one who was not restored);
- ``GET /api/annotation/batches/<name>/routing/?target_accuracy=&risk=&no_guarantee=&budget=``: the
  plan, nothing created (``qids=1`` adds the query ids); ``POST`` the same fields: route and
  publish the routed queries (201).

Refusals are JSON (``core.api.exception_handler``): bad input 400 naming the field, a state
that refuses the action (no pre-labels, no sample, routed already) 409.
"""

from __future__ import annotations

from django.db import transaction
from django.shortcuts import get_object_or_404
from drf_spectacular.utils import OpenApiParameter, extend_schema
from rest_framework import permissions, status
from rest_framework.exceptions import NotFound
from rest_framework.parsers import FormParser, JSONParser, MultiPartParser
from rest_framework.response import Response
from rest_framework.views import APIView

from annotation.crowd.services.background import start_publish
from annotation.machine.forms import PrelabelForm
from annotation.machine.report.selectors import calibration_report
from annotation.machine.selectors import prelabel_runs, read_sample
from annotation.machine.serializers import (
    CachedAnswersSerializer,
    CalibrationSampleRequestSerializer,
    CalibrationSampleSerializer,
    ClearedCacheSerializer,
    EchoReviewRequestSerializer,
    PrelabelRequestSerializer,
    PrelabelRunSerializer,
    RoutingPreviewRequestSerializer,
    RoutingRequestSerializer,
    RoutingSerializer,
)
from annotation.machine.services.background import NOT_COMPUTED, report_or_job, start_prelabel
from annotation.machine.services.calibration import create_calibration_sample
from annotation.machine.services.echo import hold_out_again, restore_echo_worker
from annotation.machine.services.prelabels import cached_answers, clear_answer_cache
from annotation.machine.services.routing import plan_routing, plan_summary, route_and_publish, routing_request
from annotation.models import Batch
from core.api import ErrorSerializer, StagedUploadsMixin, body_object, checked, form_errors, job_started
from core.errors import ServiceError, StateError
from core.models import Job
from core.serializers import JobSerializer
from core.templatetags.roles import may_act

#: The plan's query id lists, left out of a preview unless ``?qids=1``.
QID_LISTS = ("accepted", "to_humans", "over_budget", "in_training", "no_machine_label")


class _BatchView(APIView):
    permission_classes = [permissions.IsAdminUser]
    parser_classes = [JSONParser, FormParser]

    def batch(self, name: str) -> Batch:
        return get_object_or_404(Batch, name=name)


class PrelabelView(StagedUploadsMixin, _BatchView):
    parser_classes = [JSONParser, MultiPartParser, FormParser]

    @extend_schema(
        request={"application/json": PrelabelRequestSerializer, "multipart/form-data": PrelabelRequestSerializer},
        responses={202: JobSerializer, 400: ErrorSerializer, 404: ErrorSerializer},
    )
    def post(self, request, name: str, format=None):
        """Pre-label the batch's queries as a background job; poll the returned URL (the page's rules)."""
        batch = self.batch(name)
        data, files = body_object(request), request.FILES  # parse the body first: it sets upload_too_large
        form = PrelabelForm(data, files, batch=batch, too_large=getattr(request._request, "upload_too_large", None))
        if not form.is_valid():
            raise form_errors(form)
        cleaned = form.cleaned_data
        return job_started(
            start_prelabel(batch, cleaned["labeller"], samples=cleaned.get("samples"), train=form.train_source())
        )


class PrelabelRunsView(_BatchView):
    @extend_schema(responses={200: PrelabelRunSerializer(many=True), 404: ErrorSerializer})
    def get(self, request, name: str, format=None):
        """Each stored run of a machine on the batch (labeller, model, prompt version), the latest first."""
        return Response(PrelabelRunSerializer(prelabel_runs(self.batch(name)), many=True).data)


class PrelabelCacheView(APIView):
    permission_classes = [permissions.IsAdminUser]

    @extend_schema(responses={200: CachedAnswersSerializer(many=True)})
    def get(self, request, format=None):
        """The chat labeller's cached answers, per model and prompt version (shared by every batch)."""
        return Response(CachedAnswersSerializer(cached_answers(), many=True).data)


class PrelabelCacheModelView(APIView):
    permission_classes = [permissions.IsAdminUser]

    @extend_schema(
        parameters=[OpenApiParameter("prompt_version", str, description="Only this prompt version's answers.")],
        responses={200: ClearedCacheSerializer, 404: ErrorSerializer},
    )
    def delete(self, request, model: str, format=None):
        """Forget a model's cached answers: the next run with it asks the endpoint (and pays) again."""
        version = request.query_params.get("prompt_version") or None
        with transaction.atomic():
            try:
                deleted = clear_answer_cache(model, version)
            except ServiceError as exc:
                raise NotFound(str(exc)) from None
        return Response({"model": model, "prompt_version": version, "deleted": deleted})


class CalibrationSampleView(_BatchView):
    @extend_schema(
        request=CalibrationSampleRequestSerializer,
        responses={201: CalibrationSampleSerializer, 400: ErrorSerializer, 409: ErrorSerializer},
    )
    def post(self, request, name: str, format=None):
        """Draw the blind sample (a simple random one, in draw order) as a batch of its own; publish it.
        409 while the batch has a sample, unless ``extend``: then a further draw from the queries not
        sampled yet, which continues it."""
        batch = self.batch(name)
        data = checked(CalibrationSampleRequestSerializer, body_object(request))
        with transaction.atomic():  # a publishing job that cannot start leaves no sample behind
            child = create_calibration_sample(
                batch,
                data["sample"],
                labeller=data.get("labeller"),
                seed=data["seed"],
                extend=data["extend"],
                extendable=data["extendable"],
                escalation_cap=data.get("escalation_cap"),
                until=data["until"],
            )
            job = start_publish(child) if data["publish"] else None
        derivation = child.derivation
        extends = Batch.objects.filter(pk=derivation.get("extends")).values_list("name", flat=True).first()
        answer = {
            "batch": child.name,
            "parent": batch.name,
            "labeller": derivation["labeller"],
            "model": derivation["model"],
            "prompt_version": derivation["prompt_version"],
            "seed": derivation["seed"],
            "design": derivation["design"],
            "look": derivation["look"],
            "extends": extends,
            "queries": len(derivation["stratum_of"]),
            "extendable": derivation.get("extendable", True),
            "reference": _reference_with_text(derivation.get("reference")),
            "strata": derivation["strata"],
            "publish_job": job,
        }
        return Response(CalibrationSampleSerializer(answer).data, status=status.HTTP_201_CREATED)


def _reference_with_text(record: dict | None) -> dict | None:
    """The sample's reference rule as recorded, with the sentence that states it."""
    if not record:
        return None
    from genderbias.crowd.simulation.escalation import ReferenceRule

    rule = ReferenceRule(votes=record["votes"], cap=record["cap"], posterior=record.get("posterior"))
    return record | {"text": rule.describe()}


class CalibrationReportView(_BatchView):
    @extend_schema(
        parameters=[OpenApiParameter("labeller", str, description="Assess this pre-labeller (default: the sample's).")],
        responses={200: dict, 202: JobSerializer, 404: ErrorSerializer, 409: ErrorSerializer},
    )
    def get(self, request, name: str, format=None):
        """The machine against the crowd on the blind sample (as ``manage.py calibration --json``): the figures
        against the crowd majority, ``against_truth`` (the machine's de-noised accuracy against the true label,
        the ceiling and the crowd's self-agreement, from the crowd's measured reliability) and ``alt_test``
        (with ``verdict`` "not informative" and ``needed_sample`` when too few annotators qualify); 409 until
        the sample has enough crowd labels.

        The sample's own labeller's report is computed by a background job (as on the page), kept for the
        sample's state: 200 with the report once kept; until then 202 with the job computing it (started by a
        researcher's or owner's request; poll it, then ask again), and 409 for a viewer when none is under way.
        Another ``labeller``'s report is computed as asked."""
        batch, labeller = self.batch(name), request.query_params.get("labeller") or None
        if labeller is not None:
            return Response(calibration_report(batch, labeller))
        figures, job = report_or_job(batch, may_start=may_act(request.user, batch))
        if figures is not None:
            return Response(figures["report"])
        if job is None:
            raise StateError(NOT_COMPUTED)
        if job.status == Job.Status.FAILED:
            raise StateError(job.message or "the calibration report's computation failed")
        return job_started(job)


class EchoReviewView(_BatchView):
    @extend_schema(
        request=EchoReviewRequestSerializer, responses={200: dict, 400: ErrorSerializer, 409: ErrorSerializer}
    )
    def post(self, request, name: str, format=None):
        """Restore a worker the echo check flagged, or hold them out again; the sample's echo check after it
        (``held_out``, ``restored``, ``flagged`` with each one's figures, ``text``)."""
        batch = self.batch(name)
        data = checked(EchoReviewRequestSerializer, body_object(request))
        if data["restore"]:
            restore_echo_worker(batch, data["worker"], by=request.user, reason=data["reason"])
        else:
            hold_out_again(batch, data["worker"])
        return Response(read_sample(batch).echo.as_dict())


class RoutingView(_BatchView):
    @extend_schema(
        parameters=[RoutingPreviewRequestSerializer],
        responses={200: dict, 400: ErrorSerializer, 409: ErrorSerializer},
    )
    def get(self, request, name: str, format=None):
        """What routing would do: the rule (guarantee at ``risk``, or point estimate with no guarantee),
        threshold, accuracy on the sample, where every query of the batch goes (gold, sample, accepted,
        to the crowd, over budget: unlabelled), cost and saving on the queries that end up labelled;
        nothing created. Nothing certified: ``more_needed`` sample queries (``calibration-sample`` with
        ``extend``). While a query of the blind sample may still change its crowd label, ``ready`` is
        false and ``waiting`` lists each HIT it waits on (sample batch, HIT position, its sample queries,
        why, annotators the team lacks for it, how many of those places escalation added, the team's members
        who may take places): the POST then routes nothing."""
        batch = self.batch(name)
        data = checked(RoutingPreviewRequestSerializer, request.query_params, query=True)
        plan_object = plan_routing(batch, **routing_request(data))  # the rules checked there
        plan = plan_object.as_dict() | {"summary": plan_summary(plan_object)}
        if not data["qids"]:
            for key in QID_LISTS:
                plan.pop(key)
            plan["stages"] = [{k: v for k, v in stage.items() if k != "accepted"} for stage in plan["stages"]]
        return Response(plan)

    @extend_schema(
        request=RoutingRequestSerializer,
        responses={201: RoutingSerializer, 400: ErrorSerializer, 409: ErrorSerializer},
    )
    def post(self, request, name: str, format=None):
        """Route the batch as the preview showed and start publishing the routed queries (``publish_job``).
        409, nothing routed or published, while the blind sample waits (the message says for what), whatever
        the rule (``no_guarantee`` included)."""
        routed = route_and_publish(
            self.batch(name), **routing_request(checked(RoutingRequestSerializer, body_object(request)))
        )
        job = routed.job
        answer = RoutingSerializer(routed.routing).data | {"publish_job": JobSerializer(job).data if job else None}
        return Response(answer, status=status.HTTP_201_CREATED)
