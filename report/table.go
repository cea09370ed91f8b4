package report

import (
	"fmt"
	"math"
	"strings"
)

// table is one table, rendered as Markdown or HTML from the same cells.
type table struct {
	header []string
	rows   [][]string
}

// mdCell makes s safe inside a Markdown table cell.
func mdCell(s string) string {
	s = strings.ReplaceAll(s, "\r\n", " ")
	s = strings.ReplaceAll(s, "\n", " ")
	return strings.ReplaceAll(s, "|", `\|`)
}

func (t *table) markdown(b *strings.Builder) {
	b.WriteString("|")
	for _, h := range t.header {
		b.WriteString(" " + mdCell(h) + " |")
	}
	b.WriteString("\n|")
	for i := range t.header {
		if i == 0 {
			b.WriteString("---|")
		} else {
			b.WriteString("--:|")
		}
	}
	b.WriteString("\n")
	for _, r := range t.rows {
		b.WriteString("|")
		for _, c := range r {
			b.WriteString(" " + mdCell(c) + " |")
		}
		b.WriteString("\n")
	}
}

func (t *table) html(b *strings.Builder, class string) {
	fmt.Fprintf(b, `<table class="%s"><thead><tr>`, esc(class))
	for _, h := range t.header {
		b.WriteString("<th>" + esc(h) + "</th>")
	}
	b.WriteString("</tr></thead><tbody>")
	for _, r := range t.rows {
		b.WriteString("<tr>")
		for i, c := range r {
			if i == 0 {
				b.WriteString(`<th scope="row">` + esc(c) + "</th>")
			} else {
				b.WriteString("<td>" + esc(c) + "</td>")
			}
		}
		b.WriteString("</tr>")
	}
	b.WriteString("</tbody></table>\n")
}

// pct1 prints a rate in [0,1] as a percentage with one decimal.
func pct1(r float64) string {
	if math.IsNaN(r) {
		return "–"
	}
	return fmt.Sprintf("%.1f", 100*r)
}

// pct2 prints a rate in [0,1] as a percentage with two decimals (CSV).
func pct2(r float64) string {
	if math.IsNaN(r) {
		return ""
	}
	return fmt.Sprintf("%.2f", 100*r)
}

// csvRow joins fields with commas, quoting fields that need it.
func csvRow(b *strings.Builder, fields ...string) {
	for i, f := range fields {
		if i > 0 {
			b.WriteByte(',')
		}
		if strings.ContainsAny(f, ",\"\n\r") {
			f = `"` + strings.ReplaceAll(f, `"`, `""`) + `"`
		}
		b.WriteString(f)
	}
	b.WriteByte('\n')
}

// pageCSS is the inline stylesheet of the HTML pages (no external assets).
const pageCSS = `
body { font-family: -apple-system, "Segoe UI", Helvetica, Arial, sans-serif; margin: 24px auto; max-width: 1280px; color: #222222; padding: 0 16px; }
h1 { font-size: 22px; } h2 { font-size: 18px; margin-top: 32px; border-bottom: 1px solid #dddddd; } h3 { font-size: 15px; }
table { border-collapse: collapse; margin: 8px 0 16px 0; font-size: 13px; }
th, td { border: 1px solid #cccccc; padding: 3px 8px; text-align: right; }
thead th { background: #f0f3f7; } tbody th { text-align: left; background: #fafafa; }
table.audit td { text-align: left; max-width: 560px; }
.note { color: #555555; font-size: 13px; }
.charts { display: flex; flex-wrap: wrap; gap: 12px; }
.charts svg { border: 1px solid #eeeeee; }
code { background: #f4f4f4; padding: 1px 4px; }
details { margin: 6px 0; } summary { cursor: pointer; font-weight: bold; }
`

// htmlOpen writes the start of a self-contained HTML page. The page is
// also well-formed XML (polyglot markup), so it parses with encoding/xml.
func htmlOpen(b *strings.Builder, title string) {
	b.WriteString("<!DOCTYPE html>\n")
	b.WriteString(`<html xmlns="http://www.w3.org/1999/xhtml" lang="en"><head><meta charset="utf-8"/>`)
	b.WriteString(`<meta name="viewport" content="width=device-width, initial-scale=1"/>`)
	b.WriteString("<title>" + esc(title) + "</title>")
	b.WriteString("<style>" + pageCSS + "</style></head>\n<body>\n")
	b.WriteString("<h1>" + esc(title) + "</h1>\n")
}

func htmlClose(b *strings.Builder) {
	b.WriteString("</body></html>\n")
}
