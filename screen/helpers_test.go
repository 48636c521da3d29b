package screen

import "github.com/gtc-dev/gtc"

// U is a user turn.
func U(m string) gtc.HistoryEntry { return gtc.HistoryEntry{Role: "user", Msg: m} }

// A is an assistant turn.
func A(m string) gtc.HistoryEntry { return gtc.HistoryEntry{Role: "assistant", Msg: m} }
