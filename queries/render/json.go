package render

import (
	"encoding/json"

	"github.com/h3rum/h3rum/queries/model"
)

// JSON is v (a report, a comparison) as JSON and a newline, as
// json.Encoder writes it, or why it cannot be: JSON has no NaN or
// infinity, and the error names the first by its path
// (queries.CheckFinite).
func JSON(v any) ([]byte, error) {
	if err := model.CheckFinite(v); err != nil {
		return nil, err
	}
	b, err := json.Marshal(v)
	if err != nil {
		return nil, err
	}
	return append(b, '\n'), nil
}
