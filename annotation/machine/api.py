"""REST endpoints of machine pre-labelling (researchers only), as on the batch's machine-labels pages:
``/api/annotation/batches/<name>/{prelabel,prelabels,calibration-sample,calibration,calibration/echo,routing}/``
and ``/api/annotation/prelabel-cache/`` (a model as a ``<key:...>`` segment: ``/`` is ``~2F``), each
described by its method's docstring in the OpenAPI schema. Refusals are JSON (``core.api.exception_handler``):
bad input 400 naming the field, a state that refuses the action (no pre-labels, no sample, routed already) 409.
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
from annotation.machine.selectors import prelabel_runs, read_sample, reference_rule, rule_record
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
from annotation.machine.services.background import report_or_job
from annotation.machine.services.calibration import create_calibration_sample
from annotation.machine.services.echo import hold_out_again, restore_echo_worker
from annotation.machine.services.prelabels import cached_answers, clear_answer_cache
from annotation.machine.services.routing import plan_routing, plan_summary, route_and_publish, routing_request
from annotation.machine.services.routing.plan import QID_LISTS
from annotation.models import Batch
from core.api import ErrorSerializer, StagedUploadsMixin, body_object, checked, form_job_started, job_started
from core.errors import ServiceError
from core.serializers import JobSerializer
from core.templatetags.roles import may_act


class _AdminView(APIView):
    permission_classes = [permissions.IsAdminUser]


class _BatchView(_AdminView):
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
        return form_job_started(form)


class PrelabelRunsView(_BatchView):
    @extend_schema(responses={200: PrelabelRunSerializer(many=True), 404: ErrorSerializer})
    def get(self, request, name: str, format=None):
        """Each stored run of a machine on the batch (labeller, model, prompt version), the latest first."""
        return Response(PrelabelRunSerializer(prelabel_runs(self.batch(name)), many=True).data)


class PrelabelCacheView(_AdminView):
    @extend_schema(responses={200: CachedAnswersSerializer(many=True)})
    def get(self, request, format=None):
        """The chat labeller's cached answers, per model and prompt version (shared by every batch)."""
        return Response(CachedAnswersSerializer(cached_answers(), many=True).data)


class PrelabelCacheModelView(_AdminView):
    @extend_schema(
        parameters=[OpenApiParameter("prompt_version", str, description="Only this prompt version's answers.")],
        responses={200: ClearedCacheSerializer, 404: ErrorSerializer},
    )
    def delete(self, request, model: str, format=None):
        """Forget a model's cached answers: the next run with it asks the endpoint (and pays) again."""
        version = request.query_params.get("prompt_version") or None
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
        """Draw the blind sample as a batch of its own and publish it (unless ``publish`` is false). 409
        while the batch has a sample, unless ``extend``: a further draw that continues it."""
        batch = self.batch(name)
        options = checked(CalibrationSampleRequestSerializer, body_object(request))  # named as the service's keywords
        sample, publish = options.pop("sample"), options.pop("publish")
        with transaction.atomic():  # a publishing job that cannot start leaves no sample behind
            child = create_calibration_sample(batch, sample, **options)
            job = start_publish(child) if publish else None
        derivation = child.derivation
        answer = derivation | {
            "batch": child.name,
            "parent": batch.name,
            "extends": Batch.objects.filter(pk=derivation.get("extends")).values_list("name", flat=True).first(),
            "queries": len(derivation["stratum_of"]),
            "extendable": derivation.get("extendable", True),
            "reference": rule_record(reference_rule(derivation["reference"])) if derivation.get("reference") else None,
            "publish_job": job,
        }
        return Response(CalibrationSampleSerializer(answer).data, status=status.HTTP_201_CREATED)


class CalibrationReportView(_BatchView):
    @extend_schema(
        parameters=[OpenApiParameter("labeller", str, description="Assess this pre-labeller (default: the sample's).")],
        responses={200: dict, 202: JobSerializer, 404: ErrorSerializer, 409: ErrorSerializer},
    )
    def get(self, request, name: str, format=None):
        """The machine against the crowd on the blind sample (as ``manage.py calibration --json``), with
        ``against_truth`` (the machine's de-noised accuracy, from the crowd's measured reliability) and
        ``alt_test``; 409 until the sample has enough crowd labels.

        The sample's own labeller's report is computed by a background job: 200 once kept; until then 202
        with the job (started by a researcher's or owner's request: poll it, then ask again), 409 for a
        viewer when none is under way. Another ``labeller``'s report is computed as asked."""
        batch, labeller = self.batch(name), request.query_params.get("labeller") or None
        if labeller is not None:
            return Response(calibration_report(batch, labeller))
        figures, job = report_or_job(batch, may_start=may_act(request.user, batch))
        return Response(figures["report"]) if figures is not None else job_started(job)


class EchoReviewView(_BatchView):
    @extend_schema(
        request=EchoReviewRequestSerializer, responses={200: dict, 400: ErrorSerializer, 409: ErrorSerializer}
    )
    def post(self, request, name: str, format=None):
        """Restore a worker the echo check flagged (``restore``), or hold them out again; the sample's echo
        check after it. 400 naming ``worker`` when not flagged, 409 holding out one who was not restored."""
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
        """What routing would do, nothing created: the rule (guarantee at ``risk``, or the point estimate),
        threshold, where every query goes, cost and saving (``qids=1`` adds the query ids). Nothing
        certified: ``more_needed`` sample queries. While the blind sample waits, ``ready`` is false and
        ``waiting`` lists each HIT it waits on and why: the POST then routes nothing."""
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
        """Route the batch as the preview showed and start publishing the routed queries (``publish_job``);
        409, nothing routed, while the blind sample waits, whatever the rule."""
        routed = route_and_publish(
            self.batch(name), **routing_request(checked(RoutingRequestSerializer, body_object(request)))
        )
        job = routed.job
        answer = RoutingSerializer(routed.routing).data | {"publish_job": JobSerializer(job).data if job else None}
        return Response(answer, status=status.HTTP_201_CREATED)
