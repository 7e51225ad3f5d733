package console

import (
	"context"
	"net/http"
	"strings"

	"github.com/glyphoxa/glyphoxa/lifecycle/ledger"
	"github.com/glyphoxa/glyphoxa/memory"
	"github.com/glyphoxa/glyphoxa/memory/access"
)

// ledgerRow is one entry of the Ledger page: the entry, and the ID of the
// transcript line it quotes (0 when the line is not found).
type ledgerRow struct {
	ledger.Item
	Line    int64
	Pending bool
}

// ledgerPage lists the campaign's promises, debts and handovers: for a
// player those the DM confirmed, for the DM those waiting for review too,
// with Confirm and Reject (the review's own handlers).
func (s *Server) ledgerPage(w http.ResponseWriter, r *http.Request) {
	ctx := r.Context()
	camp, err := s.openCampaign(ctx)
	if err != nil {
		s.failErr(w, r, err)
		return
	}
	statuses := []memory.FactStatus{memory.StatusActive}
	if sessionOf(ctx).DM {
		statuses = append(statuses, memory.StatusPending)
	}
	items, err := ledger.List(ctx, camp.Graph(), statuses...)
	if err != nil {
		s.failErr(w, r, err)
		return
	}
	rows, err := ledgerRows(ctx, camp, items)
	if err != nil {
		s.failErr(w, r, err)
		return
	}
	s.render(w, r, http.StatusOK, "ledger.html", page{Title: "Ledger", Nav: "ledger",
		Data: map[string]any{"Rows": rows, "Message": s.takeFlash(r)}})
}

// ledgerRows finds the line each entry quotes in its session's transcript:
// the line said at its time whose text the quote holds.
func ledgerRows(ctx context.Context, camp *access.Campaign, items []ledger.Item) ([]ledgerRow, error) {
	lines := map[string][]memory.TranscriptEntry{}
	out := make([]ledgerRow, 0, len(items))
	for _, it := range items {
		row := ledgerRow{Item: it, Pending: it.Status == memory.StatusPending}
		if it.Session != "" && it.Quote != "" {
			es, ok := lines[it.Session]
			if !ok {
				var err error
				if es, err = camp.Sessions().Entries(ctx, it.Session); err != nil {
					return nil, err
				}
				lines[it.Session] = es
			}
			for _, e := range es {
				if e.Text != "" && strings.Contains(it.Quote, e.Text) && (it.SaidAt.IsZero() || e.At.Equal(it.SaidAt)) {
					row.Line = e.ID
					break
				}
			}
		}
		out = append(out, row)
	}
	return out, nil
}
