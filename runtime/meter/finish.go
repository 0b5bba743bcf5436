package meter

import "github.com/pistra/pistra/runtime/jsonscan"

// FinishReasons appends to dst the reasons a whole answer of the given
// shape gives for ending, as the provider spelt them: each choice's
// finish_reason (chat), the stop_reason (messages), the response's status
// (Responses). A trace reads it, the metering never: it allocates its
// strings.
func FinishReasons(shape Shape, body []byte, dst []string) []string {
	s := jsonscan.New(body)
	for m := s.Object(); m.Next(); {
		switch key := string(m.Key()); {
		case shape == ShapeChat && key == "choices":
			for e := s.Array(); e.Next(); {
				for c := s.Object(); c.Next(); {
					if string(c.Key()) != "finish_reason" {
						s.Skip()
						continue
					}
					dst = appendString(&s, dst)
				}
			}
		case shape == ShapeMessages && key == "stop_reason", shape == ShapeResponses && key == "status":
			dst = appendString(&s, dst)
		default:
			s.Skip()
		}
	}
	return dst
}

// appendString appends the string value at s's position, if it is one
// (a null finish_reason is none).
func appendString(s *jsonscan.Scanner, dst []string) []string {
	if v, ok := s.RawString(); ok {
		dst = append(dst, string(v))
	}
	return dst
}
