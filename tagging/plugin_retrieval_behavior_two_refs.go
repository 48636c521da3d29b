package tagging

// RetrievalBehaviorTwoRefsPlugin emits KeyRetrievalBehaviorTwoRefs when the item has exactly
// two references. Together with no_refs, single and rich it gives every item exactly one
// retrieval_behavior tag.
type RetrievalBehaviorTwoRefsPlugin struct{}

// Key returns KeyRetrievalBehaviorTwoRefs.
func (RetrievalBehaviorTwoRefsPlugin) Key() string { return KeyRetrievalBehaviorTwoRefs }

// Description explains the tag in the glossary.
func (RetrievalBehaviorTwoRefsPlugin) Description() string {
	return "The item has exactly two references."
}

// Compute emits the key when the reference count is 2.
func (RetrievalBehaviorTwoRefsPlugin) Compute(in *Input) (string, bool) {
	return emitIf(in.ReferenceCount == 2, KeyRetrievalBehaviorTwoRefs)
}
