/**
 * Sending an EMAIL delivery (decisions §15) through SMTP_URL with nodemailer: one transport per
 * dispatcher (pooled connections), cut off after WEBHOOK_TIMEOUT_MS like an HTTP delivery. The
 * attempt log gets the server's reply code (250 delivered; a 4xx or 5xx is tried again) or "no
 * SMTP answer"; never the server's text, which could carry what a log must not.
 */
import nodemailer, { type Transporter } from 'nodemailer';
import { emailMessage } from './email-message.js';

export interface MailResult {
  statusCode: number | null;
  error: string | null;
}

export class EmailSender {
  private readonly transport?: Transporter;

  constructor(
    smtpUrl: string | undefined,
    private readonly from: string,
    timeoutMs: number,
  ) {
    if (smtpUrl) {
      this.transport = nodemailer.createTransport(smtpUrl, {
        connectionTimeout: timeoutMs,
        greetingTimeout: timeoutMs,
        socketTimeout: timeoutMs,
        pool: true,
        maxConnections: 2,
      } as Parameters<typeof nodemailer.createTransport>[1]);
    }
  }

  async send(mailto: string, eventId: string, payload: string): Promise<MailResult> {
    if (!this.transport) return { statusCode: null, error: 'SMTP_URL is not set: email endpoints cannot be delivered' };
    const { subject, text } = emailMessage(payload);
    try {
      const info = (await this.transport.sendMail({
        from: this.from,
        to: mailto.replace(/^mailto:/i, ''),
        subject,
        text,
        headers: { 'X-Spendgate-Event-Id': eventId },
      })) as { response?: string };
      return { statusCode: Number(/^(\d{3})/.exec(info.response ?? '')?.[1] ?? 250), error: null };
    } catch (e) {
      const code = (e as { responseCode?: number }).responseCode;
      return code ? { statusCode: code, error: `SMTP ${code}` } : { statusCode: null, error: 'no SMTP answer' };
    }
  }

  close(): void {
    this.transport?.close();
  }
}
