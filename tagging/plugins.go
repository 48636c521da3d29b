package tagging

import "unicode/utf8"

// Thresholds of the built-in plugins.
const (
	// ShortMaxWords is the largest word count of a short question.
	ShortMaxWords = 10
	// MediumMaxWords is the largest word count of a medium question; more is long.
	MediumMaxWords = 30
	// MultiTurnMinEntries is the smallest history length (entries of any role) that is
	// multi-turn.
	MultiTurnMinEntries = 3
	// RichMinReferences is the smallest reference count that is rich retrieval.
	RichMinReferences = 3
)

// Keys of the built-in plugins.
const (
	KeyDatasetDynamic           = "dataset" + DynamicSuffix
	KeyAnswerNoAnswer           = "answer:no_answer"
	KeyQuestionLengthLong       = "question_length:long"
	KeyQuestionLengthMedium     = "question_length:medium"
	KeyQuestionLengthShort      = "question_length:short"
	KeyReferenceTypeArticle     = "reference_type:article"
	KeyReferenceTypeHelpcenter  = "reference_type:helpcenter"
	KeyRetrievalBehaviorNoRefs  = "retrieval_behavior:no_refs"
	KeyRetrievalBehaviorRich    = "retrieval_behavior:rich"
	KeyRetrievalBehaviorSingle  = "retrieval_behavior:single"
	KeyRetrievalBehaviorTwoRefs = "retrieval_behavior:two_refs"
	KeyTurnsMultiturn           = "turns:multiturn"
	KeyTurnsSingleturn          = "turns:singleturn"
)

// DefaultPlugins returns the 13 built-in plugins in registration order; that order is the
// order of computedTags. A new slice is returned on every call.
func DefaultPlugins() []Plugin {
	return []Plugin{
		DatasetPlugin{},
		AnswerNoAnswerPlugin{},
		QuestionLengthLongPlugin{},
		QuestionLengthMediumPlugin{},
		QuestionLengthShortPlugin{},
		ReferenceTypeArticlePlugin{},
		ReferenceTypeHelpcenterPlugin{},
		RetrievalBehaviorNoRefsPlugin{},
		RetrievalBehaviorRichPlugin{},
		RetrievalBehaviorSinglePlugin{},
		RetrievalBehaviorTwoRefsPlugin{},
		TurnsMultiturnPlugin{},
		TurnsSingleturnPlugin{},
	}
}

// questionWords is the word count the question_length plugins share, so the three of them
// always agree and exactly one fires. It is counted once per input.
func questionWords(in *Input) int {
	if !in.wordsCounted {
		in.words, in.wordsCounted = countWords(in.Question), true
	}
	return in.words
}

// countWords is len(strings.Fields(s)) without building the slice: the number of runs of
// characters that are not unicode.IsSpace. Invalid UTF-8 counts as a non-space character,
// as in strings.Fields.
func countWords(s string) int {
	n := 0
	inWord := false
	for i := 0; i < len(s); {
		r, size := rune(s[i]), 1
		if r >= utf8.RuneSelf {
			r, size = utf8.DecodeRuneInString(s[i:])
		}
		i += size
		if isSpace(r) {
			inWord = false
		} else if !inWord {
			inWord = true
			n++
		}
	}
	return n
}

// emitIf is the static plugin's answer: its key when the rule holds.
func emitIf(ok bool, key string) (string, bool) {
	if ok {
		return key, true
	}
	return "", false
}
