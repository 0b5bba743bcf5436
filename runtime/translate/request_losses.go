package translate

import (
	"encoding/json"

	"github.com/pistra/pistra/runtime/plan"
)

// bodyLosable is what RequestLosses can find lost per pair: the
// capabilities whose schema a pair into Anthropic may have to lower.
var bodyLosable = map[plan.Translation]plan.CapSet{
	plan.TranslateOpenAIAnthropic:    plan.Of(plan.CapStrictTools, plan.CapStructuredOutput),
	plan.TranslateResponsesAnthropic: plan.Of(plan.CapStrictTools, plan.CapStructuredOutput),
}

// BodyLosable is what translation t can lose of one body beyond
// plan.TranslationLosses: a plan whose candidates keep everything else a
// body can use must still read the body when one of these is at stake.
func BodyLosable(t plan.Translation) plan.CapSet { return bodyLosable[t] }

// RequestLosses is what translation t loses of this request body beyond
// plan.TranslationLosses, among the capabilities used says the body uses.
// An Anthropic upstream holds strict schemas to a narrower subset than
// OpenAI's, so the pairs into Anthropic lower them (LowerSchema) and the keywords
// it moves only advise the model: a strict tool whose schema needed that
// loses strict_tools, a response_format schema that needed it loses
// structured_output, for this request only. Selection narrows the
// candidate's preserves by the result, so the fidelity gate, refusals,
// preflight and the request record see the loss. A body the translator
// would refuse loses nothing here: it is answered 400 anyway.
func RequestLosses(t plan.Translation, body []byte, used plan.CapSet) plan.CapSet {
	if used&bodyLosable[t] == 0 {
		return 0
	}
	var lost plan.CapSet
	if t == plan.TranslateResponsesAnthropic {
		lost = responsesLosses(body)
	} else {
		lost = chatLosses(body)
	}
	return lost & used
}

func chatLosses(body []byte) plan.CapSet {
	var in struct {
		Tools          []oaiTool          `json:"tools"`
		ResponseFormat *oaiResponseFormat `json:"response_format"`
	}
	if json.Unmarshal(body, &in) != nil {
		return 0
	}
	var lost plan.CapSet
	for _, tool := range in.Tools {
		if isTrue(tool.Function.Strict) && lowers(tool.Function.Parameters) {
			lost |= plan.Of(plan.CapStrictTools)
		}
	}
	if rf := in.ResponseFormat; rf != nil && rf.Type == "json_schema" && rf.JSONSchema != nil && lowers(rf.JSONSchema.Schema) {
		lost |= plan.Of(plan.CapStructuredOutput)
	}
	return lost
}

// responsesLosses reads a Responses body as its translator lowers it: a
// function tool's schema when it says strict, text.format's always.
func responsesLosses(body []byte) plan.CapSet {
	var in struct {
		Tools []respTool `json:"tools"`
		Text  *respText  `json:"text"`
	}
	if json.Unmarshal(body, &in) != nil {
		return 0
	}
	var lost plan.CapSet
	for _, tool := range in.Tools {
		if tool.Type == "function" && isTrue(tool.Strict) && lowers(tool.Parameters) {
			lost |= plan.Of(plan.CapStrictTools)
		}
	}
	if tx := in.Text; tx != nil && tx.Format != nil && tx.Format.Type == "json_schema" && lowers(tx.Format.Schema) {
		lost |= plan.Of(plan.CapStructuredOutput)
	}
	return lost
}

// lowers reports whether LowerSchema has to move keywords of schema.
func lowers(schema json.RawMessage) bool {
	if len(schema) == 0 {
		return false
	}
	_, lowered, err := LowerSchema(schema)
	return err == nil && lowered
}

func isTrue(b *bool) bool { return b != nil && *b }
