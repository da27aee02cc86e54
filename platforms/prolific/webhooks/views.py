"""The endpoint Prolific delivers webhook events to. No session, no CSRF token (Prolific is not a browser):
the signature authenticates a delivery (``services.deliveries.receive``). Every answer is JSON, a refusal
a 4xx that changes nothing, never a 500.
"""

from __future__ import annotations

from django.http import HttpRequest, JsonResponse
from django.views.decorators.csrf import csrf_exempt

from genderbias.numbers import NumberError, parse_count
from platforms.prolific.signatures import MAX_BODY_BYTES, DeliveryRefused
from platforms.prolific.webhooks.services.deliveries import receive


def _refused(status: int, code: str, detail: str) -> JsonResponse:
    return JsonResponse({"error": code, "detail": detail}, status=status)


@csrf_exempt
def prolific_webhook(request: HttpRequest) -> JsonResponse:
    if request.method != "POST":
        response = _refused(405, "method_not_allowed", "deliveries are POSTed")
        response["Allow"] = "POST"
        return response
    try:  # ASCII digits only: "²".isdigit() is true and int("²") raised (a 500)
        parse_count(request.META.get("CONTENT_LENGTH") or "0", "Content-Length", maximum=MAX_BODY_BYTES)
    except NumberError:
        return _refused(413, "too_large", f"a delivery of more than {MAX_BODY_BYTES} bytes")
    try:
        receipt = receive(request.headers, request.body)
    except DeliveryRefused as exc:
        return _refused(exc.status, exc.code, str(exc))
    return JsonResponse(receipt.as_json(), status=receipt.status)
