"""invoice_view served by FastMCP (the standalone `fastmcp` package), over Streamable HTTP at
/mcp with uvicorn, one process.

    python fastmcp_server.py PORT stateless   mcp.http_app(stateless_http=True, json_response=True):
                                              no session, JSON replies; answers 2026-07-28
                                              requests (the _meta envelope) and 2025-era ones
    python fastmcp_server.py PORT stateful    mcp.http_app(): sessions (initialize,
                                              Mcp-Session-Id), SSE replies (the default)

The tool is toolgate's invoice example's invoice_view for an invoice still in draft
(examples/invoice.rs): the same input, structured result, output schema shape and text block.
Access logs are off (toolgate logs nothing per call either).
"""

import sys
from typing import Annotated, Literal

import uvicorn
from fastmcp import FastMCP
from fastmcp.exceptions import ToolError
from pydantic import BaseModel, Field

LAST_INVOICE = 999_999_999_999
INVOICE_ID = r"^INV-[1-9][0-9]{0,17}$"


class Money(BaseModel):
    amount: Annotated[str, Field(pattern=r"^\d+(\.\d+)?$", description='The amount as a decimal string, e.g. "12.50".')]
    currency: Annotated[str, Field(pattern=r"^[A-Z]{3}$", description="ISO 4217 currency code, uppercase.")]


class Invoice(BaseModel):
    """What every invoice tool returns, with the workflow's state."""

    id: Annotated[str, Field(description="The invoice id.")]
    amount: Annotated[Money, Field(description="The amount due.")]
    outcome: Annotated[str, Field(description="What the call did.")]
    state: Annotated[Literal["draft", "review", "approved", "discharged"], Field(description="The state after this call.")]
    next: Annotated[list[str], Field(description="The tools callable now on it.")]
    domain: Literal["invoice"]


mcp = FastMCP("invoice-fastmcp")


@mcp.tool
def invoice_view(
    id: Annotated[str, Field(pattern=INVOICE_ID, description="The invoice id, `INV-` followed by digits without leading zeros (e.g. `INV-1042`).")],
    domain: Literal["invoice"],
) -> Invoice:
    """Show an invoice: amount, currency and the workflow state. Changes nothing."""
    number = int(id[len("INV-"):])
    if number > LAST_INVOICE:
        raise ToolError(f"no invoice `{id}`: the last invoice is INV-{LAST_INVOICE}")
    minor = 10_000 + number % 997 * 100
    return Invoice(
        id=id,
        amount=Money(amount=f"{minor // 100}.{minor % 100:02d}", currency="EUR"),
        outcome="viewed",
        state="draft",
        next=["invoice_submit", "invoice_view"],
        domain="invoice",
    )


def main() -> None:
    if len(sys.argv) != 3 or not sys.argv[1].isdigit() or sys.argv[2] not in ("stateless", "stateful"):
        sys.exit(f"usage: {sys.argv[0]} PORT stateless|stateful")
    port, mode = int(sys.argv[1]), sys.argv[2]
    if mode == "stateless":
        app = mcp.http_app(path="/mcp", stateless_http=True, json_response=True)
    else:
        app = mcp.http_app(path="/mcp")
    print(f"fastmcp: serving http://127.0.0.1:{port}/mcp ({mode})", file=sys.stderr)
    uvicorn.run(app, host="127.0.0.1", port=port, access_log=False, log_level="warning")


if __name__ == "__main__":
    main()
