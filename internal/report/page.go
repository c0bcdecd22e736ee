package report

import (
	"embed"
	"fmt"
	"html/template"
	"io"
)

//go:embed assets
var assets embed.FS

var page = template.Must(template.New("page.html").Funcs(template.FuncMap{
	"css": func() template.CSS { return template.CSS(asset("assets/page.css")) },
	"js":  func() template.JS { return template.JS(asset("assets/page.js")) },
	"records": func(p *Page) template.JS {
		// json.Marshal escapes <, > and &, so the data cannot close its
		// script element.
		return template.JS(p.Records)
	},
}).ParseFS(assets, "assets/page.html"))

func asset(name string) string {
	b, err := assets.ReadFile(name)
	if err != nil {
		panic(err) // embedded at build time
	}
	return string(b)
}

// Render writes the page as one self-contained HTML document.
func (p *Page) Render(w io.Writer) error {
	if err := page.Execute(w, p); err != nil {
		return fmt.Errorf("report: render: %w", err)
	}
	return nil
}

// RenderCharts writes only the part of the page a live page replaces on
// each refresh: the summary, the sections and the charts over time.
func (p *Page) RenderCharts(w io.Writer) error {
	if err := page.ExecuteTemplate(w, "charts", p); err != nil {
		return fmt.Errorf("report: render: %w", err)
	}
	return nil
}
