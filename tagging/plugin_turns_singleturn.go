package tagging

// TurnsSingleturnPlugin emits KeyTurnsSingleturn when the history has fewer than
// MultiTurnMinEntries entries, an empty history included.
type TurnsSingleturnPlugin struct{}

// Key returns KeyTurnsSingleturn.
func (TurnsSingleturnPlugin) Key() string { return KeyTurnsSingleturn }

// Description explains the tag in the glossary.
func (TurnsSingleturnPlugin) Description() string {
	return "The conversation has at most two turns."
}

// Compute emits the key for histories of fewer than MultiTurnMinEntries entries.
func (TurnsSingleturnPlugin) Compute(in *Input) (string, bool) {
	return emitIf(in.Item == nil || len(in.Item.History) < MultiTurnMinEntries, KeyTurnsSingleturn)
}
