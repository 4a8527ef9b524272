package store

import "github.com/h3rum/h3rum/beacon"

// Outcome is how a sample's request went, protocol-wise: the classification
// every report and the live feed use. It is computed here, at ingest, and
// stored in the samples column outcome (Enum8, the same numbers).
type Outcome int8

// Outcomes. The numbers are the Enum8 values of the outcome column.
const (
	OutcomeOther         Outcome = 0 // anything else: h1 to the H2 origin, unknown protocol, …
	OutcomeH2            Outcome = 1 // sent to the H2 origin, served over h2
	OutcomeH3            Outcome = 2 // sent to the H3 origin, served over h3
	OutcomeWantedH3GotH2 Outcome = 3 // sent to the H3 origin, served over TCP (h2 or h1): a fallback
)

// String is the outcome's name in the outcome column and in reports.
func (o Outcome) String() string {
	switch o {
	case OutcomeH2:
		return "h2"
	case OutcomeH3:
		return "h3"
	case OutcomeWantedH3GotH2:
		return "wanted_h3_got_h2"
	}
	return "other"
}

// OutcomeOf classifies a request sent to the origin for want that was
// served over got.
func OutcomeOf(want, got beacon.Proto) Outcome {
	switch {
	case want == beacon.ProtoH2 && got == beacon.ProtoH2:
		return OutcomeH2
	case want == beacon.ProtoH3 && got == beacon.ProtoH3:
		return OutcomeH3
	case want == beacon.ProtoH3 && (got == beacon.ProtoH2 || got == beacon.ProtoH1):
		return OutcomeWantedH3GotH2
	}
	return OutcomeOther
}
