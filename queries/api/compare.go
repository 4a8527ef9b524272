package api

import (
	"context"
	"net/http"

	"github.com/h3rum/h3rum/queries"
	"github.com/h3rum/h3rum/queries/params"
)

// compare serves GET /api/compare: the report's parameters (its window is
// after) plus baseline-since and baseline-until (before, also spelled
// baseline_since and baseline_until; default: the
// window of the same length that ends where the report's begins).
func (h *Handler) compare(w http.ResponseWriter, r *http.Request) {
	h.init()
	req, ok := admit(h, w, r, params.RequestFromValues)
	if !ok {
		return
	}
	defer h.release()
	ctx, cancel := context.WithTimeout(r.Context(), 2*h.timeout())
	defer cancel()
	c, err := queries.Compare(ctx, h.Conn, req.Options, req.BaselineSince, req.BaselineUntil)
	if err != nil {
		h.reportFailed(w, err)
		return
	}
	h.writeJSON(w, c)
}
