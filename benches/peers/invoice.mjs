// The invoice_view tool as toolgate's invoice example answers it for an invoice still in draft
// (examples/invoice.rs), shared by the TypeScript peers: the same input (`id`, `domain`),
// the same structured result and the same text block (that result as JSON).
import * as z from 'zod';

/** The demo's invoices: INV-1 to INV-999999999999. */
const LAST_INVOICE = 999_999_999_999;
export const INVOICE_ID = /^INV-[1-9][0-9]{0,17}$/;

export const description = 'Show an invoice: amount, currency and the workflow state. Changes nothing.';

export const inputShape = {
  id: z.string().regex(INVOICE_ID).describe('The invoice id, `INV-` followed by digits without leading zeros (e.g. `INV-1042`).'),
  domain: z.literal('invoice'),
};

export const outputShape = {
  id: z.string().describe('The invoice id.'),
  amount: z
    .object({
      amount: z.string().regex(/^\d+(\.\d+)?$/).describe('The amount as a decimal string, e.g. "12.50".'),
      currency: z.string().regex(/^[A-Z]{3}$/).describe('ISO 4217 currency code, uppercase.'),
    })
    .describe('The amount due.'),
  outcome: z.string().describe('What the call did.'),
  state: z.enum(['draft', 'review', 'approved', 'discharged']).describe('The state after this call.'),
  next: z.array(z.string()).describe('The tools callable now on it.'),
  domain: z.literal('invoice'),
};

/** The tool's result (a CallToolResult), as toolgate's invoice_view gives it for a draft. */
export function view({ id }) {
  const number = Number(id.slice('INV-'.length));
  if (!INVOICE_ID.test(id) || !(number <= LAST_INVOICE)) {
    return { content: [{ type: 'text', text: `no invoice \`${id}\`: the last invoice is INV-${LAST_INVOICE}` }], isError: true };
  }
  const minor = 10_000 + (number % 997) * 100;
  const invoice = {
    id,
    amount: { amount: `${Math.floor(minor / 100)}.${String(minor % 100).padStart(2, '0')}`, currency: 'EUR' },
    outcome: 'viewed',
    state: 'draft',
    next: ['invoice_submit', 'invoice_view'],
    domain: 'invoice',
  };
  return { content: [{ type: 'text', text: JSON.stringify(invoice) }], structuredContent: invoice, isError: false };
}

/** `node SCRIPT PORT MODE`: the port and the mode, checked against the modes the script serves. */
export function args(modes) {
  const [port, mode] = process.argv.slice(2);
  if (!/^\d+$/.test(port ?? '') || !modes.includes(mode)) {
    console.error(`usage: node ${process.argv[1]} PORT ${modes.join('|')}`);
    process.exit(2);
  }
  return { port: Number(port), mode };
}

/** The whole body of a Node request, parsed as JSON (undefined when it is not JSON). */
export async function jsonBody(req) {
  const chunks = [];
  for await (const chunk of req) chunks.push(chunk);
  try {
    return JSON.parse(Buffer.concat(chunks).toString('utf8'));
  } catch {
    return undefined;
  }
}
