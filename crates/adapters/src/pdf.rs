//! Invoices as PDF documents (ADR 0023), drawn by `krilla` with one embedded font: VL PGothic,
//! which covers Latin with its diacritics and Japanese, carried in the binary and subset to the
//! glyphs a document uses. Laid out here, on A4: the issuer, the title and the number with the
//! dates, the client, the lines in a table whose header repeats on every page, the totals, the
//! notes, and "Page n of m" at the foot of each page.

use krilla::Document;
use krilla::color::rgb;
use krilla::geom::{PathBuilder, Point};
use krilla::metadata::Metadata;
use krilla::page::PageSettings;
use krilla::paint::{Fill, Stroke};
use krilla::text::{Font, GlyphId, KrillaGlyph};
use skrifa::MetadataProvider;
use skrifa::instance::{LocationRef, Size};
use timetrack_domain::model::invoice::decimal_milli;
use timetrack_domain::model::rate::major_units;
use timetrack_domain::model::{Invoice, InvoiceStatus, PaymentStatus};
use timetrack_domain::ports::InvoicePdf;
use timetrack_domain::timefmt::iso_date;
use timetrack_domain::{DomainError, DomainResult};

/// VL PGothic Regular (Debian's `fonts-vlgothic`; licence in `assets/fonts/`).
static FONT: &[u8] = include_bytes!("../assets/fonts/VL-PGothic-Regular.ttf");

const PAGE_W: f32 = 595.0;
const PAGE_H: f32 = 842.0;
const LEFT: f32 = 50.0;
const RIGHT: f32 = PAGE_W - 50.0;
const TOP: f32 = 60.0;
/// The lowest baseline of body text; the footer sits below it.
const BOTTOM: f32 = PAGE_H - 70.0;
/// The columns of the lines table: the description's left edge and wrap width, and the right
/// edges of quantity, unit price and amount.
const DESCRIPTION_W: f32 = 265.0;
const QUANTITY_R: f32 = 385.0;
const PRICE_R: f32 = 465.0;
const AMOUNT_R: f32 = RIGHT;
const BODY: f32 = 9.5;
const LEADING: f32 = 13.0;

/// The PDF renderer of invoices, with its font loaded once.
#[derive(Clone)]
pub struct KrillaInvoicePdf {
    font: Font,
}

impl std::fmt::Debug for KrillaInvoicePdf {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("KrillaInvoicePdf").finish_non_exhaustive()
    }
}

impl KrillaInvoicePdf {
    /// The renderer, or an error if the embedded font does not load (a broken build).
    pub fn new() -> anyhow::Result<Self> {
        let font = Font::new(FONT.into(), 0)
            .ok_or_else(|| anyhow::anyhow!("the embedded invoice font does not load"))?;
        skrifa::FontRef::from_index(FONT, 0)
            .map_err(|e| anyhow::anyhow!("the embedded invoice font does not parse: {e}"))?;
        Ok(Self { font })
    }
}

/// How a piece of text sits against its x.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Align {
    Left,
    Right,
}

/// One thing drawn on a page.
#[derive(Debug, Clone)]
enum Mark {
    Text {
        x: f32,
        y: f32,
        size: f32,
        text: String,
        align: Align,
        grey: bool,
    },
    Rule {
        y: f32,
        width: f32,
    },
}

/// Text measurement with the font's own advances.
struct Metrics<'a> {
    font: skrifa::FontRef<'a>,
    upem: f32,
}

impl<'a> Metrics<'a> {
    fn new(data: &'a [u8]) -> DomainResult<Self> {
        let font = skrifa::FontRef::from_index(data, 0)
            .map_err(|e| DomainError::Unexpected(anyhow::anyhow!("invoice font: {e}")))?;
        let upem = f32::from(
            font.metrics(Size::unscaled(), LocationRef::default())
                .units_per_em
                .max(1),
        );
        Ok(Self { font, upem })
    }

    /// The glyphs of `text` (one per character; no shaping is needed for the scripts an
    /// invoice holds), each with its advance in ems and its byte range in `text`.
    fn glyphs(&self, text: &str) -> Vec<KrillaGlyph> {
        let charmap = self.font.charmap();
        let metrics = self
            .font
            .glyph_metrics(Size::unscaled(), LocationRef::default());
        text.char_indices()
            .map(|(at, c)| {
                let gid = charmap.map(c).unwrap_or_default();
                let advance = metrics.advance_width(gid).unwrap_or(0.0) / self.upem;
                KrillaGlyph {
                    glyph_id: GlyphId::new(gid.to_u32()),
                    text_range: at..at + c.len_utf8(),
                    x_advance: advance,
                    x_offset: 0.0,
                    y_offset: 0.0,
                    y_advance: 0.0,
                    location: None,
                }
            })
            .collect()
    }

    fn width(&self, text: &str, size: f32) -> f32 {
        self.glyphs(text).iter().map(|g| g.x_advance).sum::<f32>() * size
    }

    /// `text` broken into lines no wider than `width` at `size`: at spaces where it can, within
    /// a word (or a run of Japanese, which has no spaces) where it must; explicit line breaks
    /// kept.
    fn wrap(&self, text: &str, size: f32, width: f32) -> Vec<String> {
        let mut lines = Vec::new();
        for paragraph in text.split('\n') {
            let mut line = String::new();
            for word in paragraph.split(' ') {
                let candidate = if line.is_empty() {
                    word.to_owned()
                } else {
                    format!("{line} {word}")
                };
                if self.width(&candidate, size) <= width {
                    line = candidate;
                    continue;
                }
                if !line.is_empty() {
                    lines.push(std::mem::take(&mut line));
                }
                for c in word.chars() {
                    let mut next = line.clone();
                    next.push(c);
                    if self.width(&next, size) > width && !line.is_empty() {
                        lines.push(std::mem::take(&mut line));
                        line.push(c);
                    } else {
                        line = next;
                    }
                }
            }
            lines.push(line);
        }
        lines
    }
}

/// Text fit for a line of the document: control characters (but line breaks) become spaces.
fn clean(text: &str) -> String {
    text.chars()
        .map(|c| if c.is_control() && c != '\n' { ' ' } else { c })
        .collect::<String>()
        .replace("\r\n", "\n")
}

/// `minor` units of `currency` in major units with thousands grouped: `"1,234.50 EUR"`.
fn money(minor: i64, currency: &str) -> String {
    let plain = major_units(minor, currency);
    let (sign, digits) = match plain.strip_prefix('-') {
        Some(rest) => ("-", rest),
        None => ("", plain.as_str()),
    };
    let (whole, fraction) = match digits.split_once('.') {
        Some((w, f)) => (w, Some(f)),
        None => (digits, None),
    };
    let mut grouped = String::new();
    for (i, c) in whole.chars().enumerate() {
        if i > 0 && (whole.len() - i) % 3 == 0 {
            grouped.push(',');
        }
        grouped.push(c);
    }
    match fraction {
        Some(f) => format!("{sign}{grouped}.{f} {currency}"),
        None => format!("{sign}{grouped} {currency}"),
    }
}

/// The pages of `invoice`, laid out.
struct Layout<'a> {
    metrics: Metrics<'a>,
    pages: Vec<Vec<Mark>>,
    y: f32,
}

impl Layout<'_> {
    fn page(&mut self) -> &mut Vec<Mark> {
        self.pages.last_mut().expect("a layout has a page")
    }

    /// `text` on the current line, in the body's shade or (`grey`) the labels'.
    fn put(&mut self, x: f32, size: f32, text: &str, align: Align, grey: bool) {
        let y = self.y;
        self.page().push(Mark::Text {
            x,
            y,
            size,
            text: text.to_owned(),
            align,
            grey,
        });
    }

    fn text(&mut self, x: f32, size: f32, text: &str, align: Align) {
        self.put(x, size, text, align, false);
    }

    fn grey(&mut self, x: f32, size: f32, text: &str, align: Align) {
        self.put(x, size, text, align, true);
    }

    fn rule(&mut self, width: f32) {
        let y = self.y;
        self.page().push(Mark::Rule { y, width });
    }

    fn new_page(&mut self) {
        self.pages.push(Vec::new());
        self.y = TOP;
    }

    /// Room for `height` more on this page, or a new page.
    fn room(&mut self, height: f32) -> bool {
        if self.y + height > BOTTOM {
            self.new_page();
            true
        } else {
            false
        }
    }

    fn table_header(&mut self) {
        self.grey(LEFT, 8.5, "Description", Align::Left);
        self.grey(QUANTITY_R, 8.5, "Quantity", Align::Right);
        self.grey(PRICE_R, 8.5, "Unit price", Align::Right);
        self.grey(AMOUNT_R, 8.5, "Amount", Align::Right);
        self.y += 5.0;
        self.rule(0.6);
        self.y += LEADING;
    }
}

fn title(invoice: &Invoice) -> String {
    match (invoice.status, &invoice.number) {
        (InvoiceStatus::Draft, _) => "Invoice (draft)".to_owned(),
        (InvoiceStatus::Void, Some(n)) => format!("Invoice {n} (void)"),
        (_, Some(n)) => format!("Invoice {n}"),
        (_, None) => "Invoice".to_owned(),
    }
}

fn layout<'a>(metrics: Metrics<'a>, invoice: &Invoice, status: PaymentStatus) -> Layout<'a> {
    let currency = invoice.currency.as_str();
    let mut l = Layout {
        metrics,
        pages: vec![Vec::new()],
        y: TOP,
    };
    // The issuer and the title.
    let issuer = clean(&invoice.issuer_name);
    for line in l.metrics.wrap(&issuer, 15.0, 260.0) {
        l.text(LEFT, 15.0, &line, Align::Left);
        l.y += 19.0;
    }
    let after_issuer = l.y;
    l.y = TOP;
    l.text(RIGHT, 17.0, &title(invoice), Align::Right);
    l.y += 22.0;
    let mut facts: Vec<(&str, String)> = Vec::new();
    if let Some(date) = invoice.issue_date {
        facts.push(("Issue date", iso_date(date)));
    }
    if let Some(date) = invoice.due_date {
        facts.push(("Due date", iso_date(date)));
    }
    facts.push((
        "Period",
        format!(
            "{} – {}",
            iso_date(invoice.period_from),
            iso_date(invoice.period_to)
        ),
    ));
    facts.push(("Status", status.as_str().replace('_', " ")));
    for (label, value) in facts {
        l.grey(RIGHT - 130.0, BODY, label, Align::Right);
        l.text(RIGHT, BODY, &value, Align::Right);
        l.y += LEADING;
    }
    l.y = l.y.max(after_issuer) + 18.0;
    // The client.
    l.grey(LEFT, 8.5, "Bill to", Align::Left);
    l.y += LEADING;
    let client = clean(&invoice.client.name);
    for line in l.metrics.wrap(&client, 11.0, 300.0) {
        l.text(LEFT, 11.0, &line, Align::Left);
        l.y += 15.0;
    }
    if let Some(address) = &invoice.client.address {
        for line in l.metrics.wrap(&clean(address), BODY, 300.0) {
            l.text(LEFT, BODY, &line, Align::Left);
            l.y += LEADING;
        }
    }
    if let (InvoiceStatus::Void, Some(reason)) = (invoice.status, &invoice.void_reason) {
        l.y += 6.0;
        let reason = format!("Voided: {}", clean(reason));
        for line in l.metrics.wrap(&reason, BODY, RIGHT - LEFT) {
            l.text(LEFT, BODY, &line, Align::Left);
            l.y += LEADING;
        }
    }
    l.y += 20.0;
    // The lines.
    l.room(3.0 * LEADING);
    l.table_header();
    for line in &invoice.lines {
        let description = clean(&line.description);
        let wrapped = l.metrics.wrap(&description, BODY, DESCRIPTION_W);
        let height = wrapped.len() as f32 * LEADING + 4.0;
        if l.room(height) {
            let continued = format!("{} (continued)", title(invoice));
            l.grey(LEFT, 8.5, &continued, Align::Left);
            l.y += 2.0 * LEADING;
            l.table_header();
        }
        let quantity = if line.extra {
            decimal_milli(line.quantity_milli, false)
        } else {
            format!("{} h", decimal_milli(line.quantity_milli, true))
        };
        l.text(QUANTITY_R, BODY, &quantity, Align::Right);
        l.text(
            PRICE_R,
            BODY,
            &money(line.unit_price_minor, currency),
            Align::Right,
        );
        l.text(
            AMOUNT_R,
            BODY,
            &money(line.amount_minor, currency),
            Align::Right,
        );
        for text in wrapped {
            l.text(LEFT, BODY, &text, Align::Left);
            l.y += LEADING;
        }
        l.y += 4.0;
    }
    l.y -= LEADING - 4.0;
    l.rule(0.6);
    l.y += LEADING + 4.0;
    // The totals.
    let t = invoice.totals;
    let mut totals = vec![("Subtotal".to_owned(), t.subtotal_minor, false)];
    if invoice.discount_percent.milli() > 0 || t.discount_minor > 0 {
        totals.push((
            format!("Discount ({} %)", invoice.discount_percent.to_decimal()),
            -t.discount_minor,
            false,
        ));
    }
    if invoice.tax_percent.milli() > 0 || t.tax_minor > 0 {
        totals.push((
            format!("Tax ({} %)", invoice.tax_percent.to_decimal()),
            t.tax_minor,
            false,
        ));
    }
    totals.push(("Total".to_owned(), t.total_minor, true));
    if invoice.paid_minor() > 0 {
        totals.push(("Paid".to_owned(), -invoice.paid_minor(), false));
        totals.push(("Balance due".to_owned(), invoice.balance_minor(), true));
    }
    l.room(totals.len() as f32 * (LEADING + 3.0));
    for (label, amount, strong) in totals {
        let size = if strong { 11.0 } else { BODY };
        l.grey(PRICE_R, size, &label, Align::Right);
        l.text(AMOUNT_R, size, &money(amount, currency), Align::Right);
        l.y += LEADING + if strong { 3.0 } else { 0.0 };
    }
    // The notes.
    if let Some(notes) = &invoice.notes {
        l.y += 14.0;
        l.room(2.0 * LEADING);
        l.grey(LEFT, 8.5, "Notes", Align::Left);
        l.y += LEADING;
        for line in l.metrics.wrap(&clean(notes), BODY, RIGHT - LEFT) {
            l.room(LEADING);
            l.text(LEFT, BODY, &line, Align::Left);
            l.y += LEADING;
        }
    }
    l
}

impl InvoicePdf for KrillaInvoicePdf {
    fn render(&self, invoice: &Invoice, payment_status: PaymentStatus) -> DomainResult<Vec<u8>> {
        let layout = layout(Metrics::new(FONT)?, invoice, payment_status);
        let metrics = layout.metrics;
        let total = layout.pages.len();
        let footer = clean(&invoice.issuer_name);
        let mut document = Document::new();
        document.set_metadata(
            Metadata::new()
                .title(title(invoice))
                .creator("timetrack".to_owned()),
        );
        let settings = PageSettings::from_wh(PAGE_W, PAGE_H)
            .ok_or_else(|| DomainError::Unexpected(anyhow::anyhow!("A4 is a page size")))?;
        for (n, marks) in layout.pages.iter().enumerate() {
            let mut page = document.start_page_with(settings.clone());
            let mut surface = page.surface();
            let mut draw = |x: f32, y: f32, size: f32, text: &str, align: Align, grey: bool| {
                let glyphs = metrics.glyphs(text);
                let width = glyphs.iter().map(|g| g.x_advance).sum::<f32>() * size;
                let x = match align {
                    Align::Left => x,
                    Align::Right => x - width,
                };
                let shade = if grey { 95 } else { 20 };
                surface.set_fill(Some(Fill {
                    paint: rgb::Color::new(shade, shade, shade).into(),
                    ..Fill::default()
                }));
                surface.draw_glyphs(
                    Point::from_xy(x, y),
                    &glyphs,
                    self.font.clone(),
                    text,
                    size,
                    false,
                );
            };
            for mark in marks {
                if let Mark::Text {
                    x,
                    y,
                    size,
                    text,
                    align,
                    grey,
                } = mark
                {
                    draw(*x, *y, *size, text, *align, *grey);
                }
            }
            draw(LEFT, PAGE_H - 40.0, 8.0, &footer, Align::Left, true);
            let numbering = format!("Page {} of {total}", n + 1);
            draw(RIGHT, PAGE_H - 40.0, 8.0, &numbering, Align::Right, true);
            for mark in marks {
                if let Mark::Rule { y, width } = mark {
                    let mut path = PathBuilder::new();
                    path.move_to(LEFT, *y);
                    path.line_to(RIGHT, *y);
                    if let Some(path) = path.finish() {
                        surface.set_fill(None);
                        surface.set_stroke(Some(Stroke {
                            paint: rgb::Color::new(150, 150, 150).into(),
                            width: *width,
                            ..Stroke::default()
                        }));
                        surface.draw_path(&path);
                        surface.set_stroke(None);
                    }
                }
            }
            surface.finish();
            page.finish();
        }
        document
            .finish()
            .map_err(|e| DomainError::Unexpected(anyhow::anyhow!("rendering a PDF: {e:?}")))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn money_groups_thousands_in_major_units() {
        assert_eq!(money(123_456_789, "EUR"), "1,234,567.89 EUR");
        assert_eq!(money(-2000, "EUR"), "-20.00 EUR");
        assert_eq!(money(1_234_567, "JPY"), "1,234,567 JPY");
        assert_eq!(money(1234, "BHD"), "1.234 BHD");
        assert_eq!(money(5, "USD"), "0.05 USD");
    }

    #[test]
    fn text_wraps_at_spaces_and_inside_runs_without_them() {
        let metrics = Metrics::new(FONT).unwrap();
        let lines = metrics.wrap("株式会社ルミナ".repeat(10).as_str(), 10.0, 100.0);
        assert!(lines.len() > 1);
        assert_eq!(lines.concat(), "株式会社ルミナ".repeat(10));
        for line in &lines {
            assert!(metrics.width(line, 10.0) <= 100.0);
        }
        let words = metrics.wrap("Žluťoučký kůň s.r.o. pěl ďábelské ódy", 10.0, 80.0);
        assert!(words.len() > 1);
        assert_eq!(words.join(" "), "Žluťoučký kůň s.r.o. pěl ďábelské ódy");
    }

    #[test]
    fn the_font_covers_the_scripts_an_invoice_holds() {
        let font = skrifa::FontRef::from_index(FONT, 0).unwrap();
        let charmap = font.charmap();
        for c in "株式会社ルミナŽluťoučký kůň s.r.o.€¥£–„“".chars() {
            assert!(charmap.map(c).is_some(), "no glyph for {c}");
        }
    }
}
