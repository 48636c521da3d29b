package tagging

// RetrievalBehaviorRichPlugin emits KeyRetrievalBehaviorRich when the item has at least
// RichMinReferences references.
type RetrievalBehaviorRichPlugin struct{}

// Key returns KeyRetrievalBehaviorRich.
func (RetrievalBehaviorRichPlugin) Key() string { return KeyRetrievalBehaviorRich }

// Description explains the tag in the glossary.
func (RetrievalBehaviorRichPlugin) Description() string {
	return "The item has three or more references."
}

// Compute emits the key when the reference count is at least RichMinReferences.
func (RetrievalBehaviorRichPlugin) Compute(in *Input) (string, bool) {
	return emitIf(in.ReferenceCount >= RichMinReferences, KeyRetrievalBehaviorRich)
}
