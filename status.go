package gtc

// Status is the curation state of an item.
type Status string

// The four statuses.
const (
	StatusDraft    Status = "draft"
	StatusApproved Status = "approved"
	StatusSkipped  Status = "skipped"
	StatusDeleted  Status = "deleted"
)

// Statuses lists every status in the order messages name them.
var Statuses = []Status{StatusDraft, StatusApproved, StatusSkipped, StatusDeleted}

// Valid reports whether s is one of the four statuses.
func (s Status) Valid() bool {
	switch s {
	case StatusDraft, StatusApproved, StatusSkipped, StatusDeleted:
		return true
	}
	return false
}

// StatusList is "draft, approved, skipped, deleted", as error messages write it.
const StatusList = "draft, approved, skipped, deleted"

// ParseStatus returns the status named s, or an INVALID_STATUS error.
func ParseStatus(s string) (Status, error) {
	st := Status(s)
	if !st.Valid() {
		return "", Errorf(CodeInvalidStatus, "Invalid status value: %s. Must be one of: %s", s, StatusList)
	}
	return st, nil
}
