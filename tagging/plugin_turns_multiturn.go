package tagging

// TurnsMultiturnPlugin emits KeyTurnsMultiturn when the history has at least
// MultiTurnMinEntries entries. Entries of every role count, not only user turns.
type TurnsMultiturnPlugin struct{}

// Key returns KeyTurnsMultiturn.
func (TurnsMultiturnPlugin) Key() string { return KeyTurnsMultiturn }

// Description explains the tag in the glossary.
func (TurnsMultiturnPlugin) Description() string {
	return "The conversation has more than two turns."
}

// Compute emits the key for histories of MultiTurnMinEntries entries or more.
func (TurnsMultiturnPlugin) Compute(in *Input) (string, bool) {
	return emitIf(in.Item != nil && len(in.Item.History) >= MultiTurnMinEntries, KeyTurnsMultiturn)
}
