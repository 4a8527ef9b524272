package render

import (
	"bufio"
	"fmt"
	"io"

	"github.com/h3rum/h3rum/queries/model"
)

// Comparison writes c as text: its windows, then one line per group.
func Comparison(w io.Writer, c *model.Comparison) error {
	bw := bufio.NewWriter(w)
	fmt.Fprintf(bw, "h3rum comparison at p%g: [%s, %s) (%s runs) against the baseline [%s, %s) (%s runs), design %s\n",
		c.P, c.After.Since, c.After.Until, model.GroupDigits(c.After.Runs), c.Before.Since, c.Before.Until, model.GroupDigits(c.Before.Runs), c.After.Design)
	for _, g := range c.Groups {
		fmt.Fprintln(bw, g.Text)
	}
	fmt.Fprintf(bw, "(the change is after − before of H3 − H2; its 95 %% interval combines the two windows' bootstrap intervals as independent estimates, REPORT.md \"Comparing two windows\")\n")
	return bw.Flush()
}
