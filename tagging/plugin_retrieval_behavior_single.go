package tagging

// RetrievalBehaviorSinglePlugin emits KeyRetrievalBehaviorSingle when the item has exactly
// one reference.
type RetrievalBehaviorSinglePlugin struct{}

// Key returns KeyRetrievalBehaviorSingle.
func (RetrievalBehaviorSinglePlugin) Key() string { return KeyRetrievalBehaviorSingle }

// Description explains the tag in the glossary.
func (RetrievalBehaviorSinglePlugin) Description() string {
	return "The item has exactly one reference."
}

// Compute emits the key when the reference count is 1.
func (RetrievalBehaviorSinglePlugin) Compute(in *Input) (string, bool) {
	return emitIf(in.ReferenceCount == 1, KeyRetrievalBehaviorSingle)
}
