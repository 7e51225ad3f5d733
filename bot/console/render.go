package console

import (
	"bytes"
	"fmt"
	"hash/fnv"
	"html/template"
	"io/fs"
	"net/http"
	"path"
	"strings"
	"time"

	"github.com/glyphoxa/glyphoxa/memory"
)

// page is what every template gets.
type page struct {
	Title   string
	Nav     string
	Session session
	Data    any
}

var funcs = template.FuncMap{
	"clock": func(t time.Time) string { return t.UTC().Format("15:04:05") },
	"date": func(t time.Time) string {
		if t.IsZero() {
			return ""
		}
		return t.UTC().Format("2006-01-02 15:04")
	},
	"pct":     func(f float64) string { return fmt.Sprintf("%.2f", f) },
	"speaker": speakerClass,
	"ms":      func(d time.Duration) string { return fmt.Sprintf("%d ms", d.Milliseconds()) },
}

// speakerColours is the number of speaker colours (spk0… in
// console.css).
const speakerColours = 12

// speakerClass gives a speaker one of the speaker colours by a hash of the
// name, the same on every page: for lines from many sessions (evidence,
// what an NPC heard), where two speakers may share a colour. A session's
// own page uses sessionColours.
func speakerClass(name string) string {
	h := fnv.New32a()
	h.Write([]byte(strings.ToLower(name)))
	return fmt.Sprintf("spk%d", h.Sum32()%speakerColours)
}

// sessionColours gives each speaker of a session a colour of its own, in
// the order they first speak: stable for the session, and distinct for up
// to speakerColours speakers (then the colours repeat, as few as possible).
func sessionColours(entries []memory.TranscriptEntry) map[string]string {
	out := map[string]string{}
	for _, e := range entries {
		if _, ok := out[e.SpeakerName]; !ok {
			out[e.SpeakerName] = fmt.Sprintf("spk%d", len(out)%speakerColours)
		}
	}
	return out
}

// parsePages parses each page template together with the layout.
func parsePages() (map[string]*template.Template, error) {
	layout, err := template.New("layout.html").Funcs(funcs).ParseFS(assets, "assets/layout.html")
	if err != nil {
		return nil, err
	}
	names, err := fs.Glob(assets, "assets/*.html")
	if err != nil {
		return nil, err
	}
	out := map[string]*template.Template{}
	for _, n := range names {
		base := path.Base(n)
		if base == "layout.html" {
			continue
		}
		t, err := template.Must(layout.Clone()).ParseFS(assets, n)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", base, err)
		}
		out[base] = t
	}
	return out, nil
}

// render writes a page; the body is rendered into a buffer first so that a
// template error becomes a 500, not half a page.
func (s *Server) render(w http.ResponseWriter, r *http.Request, status int, name string, p page) {
	if p.Session.UserID == "" {
		p.Session = sessionOf(r.Context())
	}
	t, ok := s.tmpl[name]
	if !ok {
		http.Error(w, "no template "+name, http.StatusInternalServerError)
		return
	}
	var buf bytes.Buffer
	if err := t.ExecuteTemplate(&buf, "layout.html", p); err != nil {
		s.log.Error("rendering a page", "page", name, "err", err)
		http.Error(w, "rendering the page failed", http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(status)
	w.Write(buf.Bytes())
}

// fail answers with an error page (or plain text for the API).
func (s *Server) fail(w http.ResponseWriter, r *http.Request, status int, msg string) {
	if strings.HasPrefix(r.URL.Path, "/api/") {
		http.Error(w, msg, status)
		return
	}
	s.render(w, r, status, "error.html", page{Title: http.StatusText(status), Data: msg})
}

// failErr reports a store error: not found and invalid input are the user's
// to fix and are shown; an outage and a refusal are said plainly (see
// classify); anything else is logged and shown generically.
func (s *Server) failErr(w http.ResponseWriter, r *http.Request, err error) {
	status, msg := classify(err)
	switch status {
	case http.StatusInternalServerError:
		s.log.Error("console request failed", "path", r.URL.Path, "err", err)
	case http.StatusServiceUnavailable:
		w.Header().Set("Retry-After", "30")
		s.log.Warn("console request met a memory outage", "path", r.URL.Path, "err", err)
	}
	s.fail(w, r, status, msg)
}

// msgUnavailable is what a page says while the database cannot be reached.
const msgUnavailable = "The campaign's memory is unavailable right now: its database cannot be reached. Try again in a minute."

// flashErr is the message a form's redirect carries for err: an outage or a
// refusal said plainly, the store's error (which names the problem)
// otherwise.
func flashErr(err error) string {
	if status, msg := classify(err); status == http.StatusServiceUnavailable || status == http.StatusForbidden {
		return msg
	}
	return err.Error()
}
