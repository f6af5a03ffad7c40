"""The payments example through the MCP Python SDK's default client, with a bearer token.

    python payments_flow.py URL TOKEN OUTBOX

A capture needs the user's one-time code: the first call gets CONFIRMATION_REQUIRED, the
code arrives in the development outbox (one JSON line per code), and the same call with
`challenge_id` and `otp` captures. Anything the model might write instead (`confirmed`)
changes nothing, and the code confirms once.
"""

import uuid

from flowcheck import bearer_client, check, code_for, expect, ok, passed, refused, run


async def flow(url: str, token: str, outbox: str) -> None:
    # The default client; only its HTTP client carries the user's credentials.
    async with bearer_client(url, token) as client:
        created = await ok(
            client,
            "payment_create",
            {"domain": "payment", "description": "order 7", "amount": {"amount": "100.00", "currency": "USD"}},
        )
        payment = created["payment_id"]
        passed(f"payment_create -> {payment}")

        authorized = await ok(client, "payment_authorize", {"domain": "payment", "payment_id": payment})
        expect(authorized, "state", "authorized", "payment_authorize")
        passed(f"payment_authorize {payment} -> authorized")

        capture = {
            "domain": "payment",
            "payment_id": payment,
            "amount": {"amount": "100.00", "currency": "USD"},
            "request_id": str(uuid.uuid4()),
        }
        required = await refused(client, "payment_capture", capture, "CONFIRMATION_REQUIRED")
        challenge = required["challenge_id"]
        passed(f"payment_capture -> CONFIRMATION_REQUIRED by {required['channel']}")

        await refused(client, "payment_capture", {**capture, "confirmed": True}, "INVALID_ARGUMENT")
        passed("`confirmed: true` changes nothing")

        otp = code_for(outbox, challenge)
        captured = await ok(client, "payment_capture", {**capture, "challenge_id": challenge, "otp": otp})
        expect(captured, "state", "captured", "the confirmed payment_capture")
        check(captured["captured"]["amount"] == "100.00", f"captured {captured['captured']}")
        passed(f"payment_capture {payment} with the code -> captured")

        again = await ok(client, "payment_capture", {**capture, "challenge_id": challenge, "otp": otp})
        check(again == captured, f"the retry with the same request_id returned {again}, not the first result")
        passed("a retry with the same request_id -> the first result")


if __name__ == "__main__":
    run(flow, "payments_flow.py URL TOKEN OUTBOX", 3, 3)
