package meter

import (
	"fmt"

	"github.com/pistra/pistra/runtime/jsonscan"
)

// ReadAnswer reads the usage a whole non-stream answer reports, from the
// top-level "usage" object every shape puts it in. It is also the answer's
// integrity check: the whole body is walked with its grammar checked, so a
// body cut short or otherwise not one JSON document is an error, which the
// attempt loop treats as a broken answer. A body without a usage object,
// or with a null one, reads as not Reported, without error.
func ReadAnswer(shape Shape, body []byte) (Usage, error) {
	v := vocabOf(shape)
	var c counts
	s := jsonscan.New(body)
	for m := s.Object(); m.Next(); {
		if string(m.Key()) != "usage" {
			s.Skip()
			continue
		}
		c = counts{} // a member given twice: the last one stands
		readUsage(&s, v, &c)
	}
	s.End()
	if err := s.Err(); err != nil {
		return Usage{}, fmt.Errorf("meter: answer body: %w", err)
	}
	return c.usage(shape), nil
}
