package console

import (
	"compress/gzip"
	"context"
	"io"
	"net/http"
	"strings"
)

// Exporter writes a campaign's whole memory as a bundle (memory/bundle),
// the file `glyphoxa import` restores. The console offers it to the DM as
// a download.
type Exporter interface {
	Export(ctx context.Context, campaign string, w io.Writer) error
}

// ExporterFunc adapts a function to Exporter.
type ExporterFunc func(ctx context.Context, campaign string, w io.Writer) error

// Export calls f.
func (f ExporterFunc) Export(ctx context.Context, campaign string, w io.Writer) error {
	return f(ctx, campaign, w)
}

// exportBundle streams the signed-in DM's campaign as a gzipped bundle.
// The bundle is written as the database returns it; if the export fails
// part way, the connection is aborted so the browser reports a failed
// download (and a cut bundle has no end record, which import refuses).
func (s *Server) exportBundle(w http.ResponseWriter, r *http.Request) {
	if s.cfg.Export == nil {
		s.fail(w, r, http.StatusNotFound, "This console was started without export; use glyphoxa export --campaign ID on the server.")
		return
	}
	sess := sessionOf(r.Context())
	name := sess.Campaign + "-" + s.clk.Now().UTC().Format("2006-01-02") + ".glyphoxa.jsonl.gz"
	out := &startedWriter{w: w, start: func() {
		h := w.Header()
		h.Set("Content-Type", "application/gzip")
		h.Set("Content-Disposition", `attachment; filename="`+strings.ReplaceAll(name, `"`, "")+`"`)
		h.Set("Cache-Control", "no-store")
	}}
	gz := gzip.NewWriter(out)
	err := s.cfg.Export.Export(r.Context(), sess.Campaign, gz)
	if err == nil {
		err = gz.Close()
	}
	if err == nil {
		return
	}
	s.log.Error("console export failed", "campaign", sess.Campaign, "err", err)
	if !out.started {
		s.failErr(w, r, err)
		return
	}
	// The status line is sent: abort the response so the download fails
	// visibly instead of ending as a short file.
	panic(http.ErrAbortHandler)
}

// startedWriter calls start before the first byte goes out.
type startedWriter struct {
	w       io.Writer
	start   func()
	started bool
}

func (s *startedWriter) Write(p []byte) (int, error) {
	if !s.started {
		s.started = true
		s.start()
	}
	return s.w.Write(p)
}
