package tagging

// RetrievalBehaviorNoRefsPlugin emits KeyRetrievalBehaviorNoRefs when the item has no
// references.
type RetrievalBehaviorNoRefsPlugin struct{}

// Key returns KeyRetrievalBehaviorNoRefs.
func (RetrievalBehaviorNoRefsPlugin) Key() string { return KeyRetrievalBehaviorNoRefs }

// Description explains the tag in the glossary.
func (RetrievalBehaviorNoRefsPlugin) Description() string { return "The item has no references." }

// Compute emits the key when the reference count is 0.
func (RetrievalBehaviorNoRefsPlugin) Compute(in *Input) (string, bool) {
	return emitIf(in.ReferenceCount == 0, KeyRetrievalBehaviorNoRefs)
}
