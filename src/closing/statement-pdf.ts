/**
 * A statement as a PDF a finance person can read (pdfkit): the project, the month, when and by
 * whom it was closed, the totals per unit (credits and USD side by side, never added), then a
 * table per section, and the digest of the ledger it covers at the foot of every page. It is
 * rendered once, at close, and kept as bytes. Text uses DejaVu Sans when the system has it (any script), else Helvetica
 * (Latin only).
 */
import { existsSync } from 'node:fs';
import PDFDocument from 'pdfkit';
import type { StatementData } from './statement-data.js';

const FONT_PATHS = [
  '/usr/share/fonts/truetype/dejavu/DejaVuSans.ttf',
  '/usr/share/fonts/truetype/dejavu/DejaVuSans-Bold.ttf',
];
const MARGIN = 50;

type Column = { title: string; width: number; align?: 'left' | 'right' };

export function statementPdf(s: StatementData): Promise<Buffer> {
  const doc = new PDFDocument({
    size: 'A4',
    margin: MARGIN,
    bufferPages: true,
    info: { Title: `Statement ${s.project.name} ${s.month}`, Author: 'spendgate', CreationDate: new Date(s.closedAt) },
  });
  const [regular, bold] = FONT_PATHS.every((p) => existsSync(p)) ? FONT_PATHS : ['Helvetica', 'Helvetica-Bold'];
  const chunks: Buffer[] = [];
  doc.on('data', (c: Buffer) => chunks.push(c));
  const done = new Promise<Buffer>((resolve) => doc.on('end', () => resolve(Buffer.concat(chunks))));
  const width = doc.page.width - 2 * MARGIN;

  doc.font(bold).fontSize(18).text(`Statement: ${s.project.name}`);
  doc
    .font(regular)
    .fontSize(11)
    .text(
      `${monthName(s.month)} (UTC), closed ${s.closedAt.replace('T', ' ').slice(0, 19)} UTC by ${s.closedBy}${s.version > 1 ? `, version ${s.version} (after a reopening)` : ''}`,
    );
  doc.fontSize(8).fillColor('#555').text(`project ${s.project.id}`).fillColor('black').moveDown();

  section(doc, bold, 'Totals per unit (credits and USD are never added together)');
  table(
    doc,
    regular,
    bold,
    [
      { title: 'Unit', width: 120 },
      { title: 'Amount', width: 200, align: 'right' },
      { title: 'Tasks', width: 80, align: 'right' },
    ],
    s.totals.map((t) => [t.unit, t.amount, String(t.tasks)]),
    'No spend in this month.',
  );
  section(doc, bold, 'By model');
  // Under a contract (decisions §19), the list prices' figure beside what is owed.
  const listed = s.byModel.some((m) => m.listAmount);
  table(
    doc,
    regular,
    bold,
    listed
      ? [
          { title: 'Model', width: 140 },
          { title: 'Kind', width: 50 },
          { title: 'Unit', width: 60 },
          { title: 'At list prices', width: 100, align: 'right' },
          { title: 'Amount owed', width: 100, align: 'right' },
          { title: 'Tasks', width: 40, align: 'right' },
        ]
      : [
          { title: 'Model', width: 170 },
          { title: 'Kind', width: 60 },
          { title: 'Unit', width: 70 },
          { title: 'Amount', width: 130, align: 'right' },
          { title: 'Tasks', width: 60, align: 'right' },
        ],
    s.byModel.map((m) =>
      listed
        ? [m.model, m.kind, m.unit, m.listAmount ?? m.amount, m.amount, String(m.tasks)]
        : [m.model, m.kind, m.unit, m.amount, String(m.tasks)],
    ),
    'No spend in this month.',
  );
  section(doc, bold, 'By API key');
  table(
    doc,
    regular,
    bold,
    [
      { title: 'Key', width: 110 },
      { title: 'Name', width: 130 },
      { title: 'Unit', width: 70 },
      { title: 'Amount', width: 120, align: 'right' },
      { title: 'Tasks', width: 60, align: 'right' },
    ],
    s.byKey.map((k) => [k.key, k.name ?? '', k.unit, k.amount, String(k.tasks)]),
    'No spend in this month.',
  );
  section(doc, bold, 'Adjustments');
  table(
    doc,
    regular,
    bold,
    [
      { title: 'Entry', width: 60 },
      { title: 'Reason', width: 250 },
      { title: 'Unit', width: 60 },
      { title: 'Amount', width: 120, align: 'right' },
    ],
    s.adjustments.map((a) => [a.entryId, `${a.reason}${a.taskId ? ` (task ${a.taskId})` : ''}`, a.unit, a.amount]),
    'None.',
  );
  section(doc, bold, 'Prior-period items received (movements of closed months, posted here)');
  table(
    doc,
    regular,
    bold,
    [
      { title: 'Task', width: 80 },
      { title: 'Belongs to', width: 80 },
      { title: 'Kind', width: 90 },
      { title: 'Unit', width: 60 },
      { title: 'Amount', width: 120, align: 'right' },
    ],
    s.priorPeriod.map((p) => [p.taskId ?? `entry ${p.entryId}`, p.belongsTo, p.kind, p.unit, p.amount]),
    'None.',
  );
  section(doc, bold, 'Open at close: still held, carried to the next month (accrued estimates, not in the totals)');
  table(
    doc,
    regular,
    bold,
    [
      { title: 'Task', width: 80 },
      { title: 'Model', width: 160 },
      { title: 'Accepted (UTC)', width: 120 },
      { title: 'Unit', width: 50 },
      { title: 'Held', width: 90, align: 'right' },
    ],
    s.openItems.map((o) => [o.taskId, o.model, o.acceptedAt.replace('T', ' ').slice(0, 19), o.unit, o.hold]),
    'None.',
  );

  const head =
    s.ledgerHead === undefined
      ? ''
      : ` · ledger head at close: ${s.ledgerHead ? `seal ${s.ledgerHead.seq} ${s.ledgerHead.hash}` : 'no seal yet'}`;
  const footer = `Ledger digest (SHA-256 over ${s.entries} entries of this project and month): ${s.ledgerDigest}${head}`;
  const range = doc.bufferedPageRange();
  for (let i = range.start; i < range.start + range.count; i++) {
    doc.switchToPage(i);
    doc.page.margins.bottom = 0; // the foot is below the content area: without this pdfkit would start a new page
    doc
      .font(regular)
      .fontSize(7)
      .fillColor('#555')
      .text(footer, MARGIN, doc.page.height - MARGIN + 10, { width, lineBreak: false });
    doc.text(`page ${i + 1} of ${range.count}`, MARGIN, doc.page.height - MARGIN + 20, {
      width,
      align: 'right',
      lineBreak: false,
    });
  }
  doc.end();
  return done;
}

function section(doc: PDFKit.PDFDocument, bold: string, title: string): void {
  if (doc.y > doc.page.height - MARGIN - 80) doc.addPage();
  doc.moveDown(0.6).font(bold).fontSize(12).fillColor('black').text(title, MARGIN).moveDown(0.3);
}

function table(
  doc: PDFKit.PDFDocument,
  regular: string,
  bold: string,
  columns: Column[],
  rows: string[][],
  empty: string,
): void {
  const line = (cells: string[], font: string) => {
    if (doc.y > doc.page.height - MARGIN - 30) doc.addPage();
    const y = doc.y;
    let x = MARGIN;
    let bottom = y;
    doc.font(font).fontSize(9);
    cells.forEach((cell, i) => {
      const c = columns[i]!;
      doc.text(cell, x, y, { width: c.width - 6, align: c.align ?? 'left' });
      bottom = Math.max(bottom, doc.y);
      x += c.width;
    });
    doc.x = MARGIN;
    doc.y = bottom + 2;
  };
  if (rows.length === 0) {
    doc.font(regular).fontSize(9).fillColor('#555').text(empty, MARGIN).fillColor('black');
    return;
  }
  line(
    columns.map((c) => c.title),
    bold,
  );
  doc
    .moveTo(MARGIN, doc.y)
    .lineTo(MARGIN + columns.reduce((w, c) => w + c.width, 0), doc.y)
    .strokeColor('#999')
    .stroke();
  doc.y += 2;
  for (const row of rows) line(row, regular);
}

function monthName(label: string): string {
  const [year, month] = label.split('-').map(Number);
  return `${new Date(Date.UTC(year!, month! - 1, 1)).toLocaleString('en', { month: 'long', timeZone: 'UTC' })} ${year}`;
}
