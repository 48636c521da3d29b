package tagging

// QuestionLengthMediumPlugin emits KeyQuestionLengthMedium when the latest user question has
// more than ShortMaxWords and at most MediumMaxWords words.
type QuestionLengthMediumPlugin struct{}

// Key returns KeyQuestionLengthMedium.
func (QuestionLengthMediumPlugin) Key() string { return KeyQuestionLengthMedium }

// Description explains the tag in the glossary.
func (QuestionLengthMediumPlugin) Description() string {
	return "The latest user question has 11 to 30 words."
}

// Compute emits the key for questions of ShortMaxWords+1 to MediumMaxWords words.
func (QuestionLengthMediumPlugin) Compute(in *Input) (string, bool) {
	w := questionWords(in)
	return emitIf(w > ShortMaxWords && w <= MediumMaxWords, KeyQuestionLengthMedium)
}
