package fakeprovider

import (
	"encoding/base64"
	"encoding/binary"
	"encoding/json"
	"errors"
	"hash/fnv"
	"math"
	"strconv"
)

const (
	defaultEmbeddingDimensions = 1536
	maxEmbeddingDimensions     = 8192
)

// POST /v1/embeddings
//
// Vectors are unit-length and derived from each input's content, so equal
// inputs embed equally. encoding_format "base64" (the SDKs' default) sends
// little-endian float32 bytes; "float" sends the same float32 values as
// numbers.
func (x *exchange) embeddings() {
	req, ok := x.request()
	if !ok {
		return
	}
	job, err := newEmbeddingJob(req)
	if err != nil {
		x.fail(err)
		return
	}
	x.bill(req.Model, job.tokens(), 0, 0, 0)
	buf := getBuffer()
	defer putBuffer(buf)
	*buf = job.appendResponse((*buf)[:0], req.Model)
	x.writeBody(200, *buf)
}

// embeddingJob is a validated embeddings request.
type embeddingJob struct {
	inputs   []embeddingInput
	dims     int
	asBase64 bool
}

func newEmbeddingJob(req *wireRequest) (*embeddingJob, *apiError) {
	if req.Model == "" {
		return nil, badRequest("you must provide a model parameter", "")
	}
	inputs, err := embeddingInputs(req.Input)
	if err != nil {
		return nil, badRequest(err.Error(), "input")
	}
	job := &embeddingJob{inputs: inputs, dims: req.Dimensions}
	if job.dims == 0 {
		job.dims = defaultEmbeddingDimensions
	}
	if job.dims < 1 || job.dims > maxEmbeddingDimensions {
		return nil, badRequest("dimensions must be between 1 and "+strconv.Itoa(maxEmbeddingDimensions), "dimensions")
	}
	switch req.EncodingFormat {
	case "", "float":
	case "base64":
		job.asBase64 = true
	default:
		return nil, badRequest(`encoding_format must be "float" or "base64"`, "encoding_format")
	}
	return job, nil
}

func (j *embeddingJob) appendResponse(b []byte, model string) []byte {
	vec := make([]float32, j.dims)
	var raw []byte
	if j.asBase64 {
		raw = make([]byte, 4*j.dims)
	}
	b = append(b, `{"object":"list","data":[`...)
	for i, in := range j.inputs {
		embed(vec, in.seed)
		if i > 0 {
			b = append(b, ',')
		}
		b = append(b, `{"object":"embedding","index":`...)
		b = appendInt(b, i)
		b = append(b, `,"embedding":`...)
		if j.asBase64 {
			for k, v := range vec {
				binary.LittleEndian.PutUint32(raw[4*k:], math.Float32bits(v))
			}
			b = append(b, '"')
			b = base64.StdEncoding.AppendEncode(b, raw)
			b = append(b, '"')
		} else {
			b = appendFloats(b, vec)
		}
		b = append(b, '}')
	}
	b = append(b, `],"model":`...)
	b = appendString(b, model)
	tokens := j.tokens()
	b = append(b, `,"usage":{"prompt_tokens":`...)
	b = appendInt(b, tokens)
	b = append(b, `,"total_tokens":`...)
	b = appendInt(b, tokens)
	return append(b, "}}"...)
}

func appendFloats(b []byte, vec []float32) []byte {
	b = append(b, '[')
	for j, v := range vec {
		if j > 0 {
			b = append(b, ',')
		}
		b = strconv.AppendFloat(b, float64(v), 'g', -1, 32)
	}
	return append(b, ']')
}

// embed fills vec with a unit vector drawn from a generator seeded by seed.
func embed(vec []float32, seed uint64) {
	state := seed | 1
	var norm float64
	for i := range vec {
		// xorshift64*: cheap, deterministic, good enough to look random.
		state ^= state >> 12
		state ^= state << 25
		state ^= state >> 27
		v := float64(int64(state*0x2545f4914f6cdd1d)) / math.MaxInt64
		vec[i] = float32(v)
		norm += v * v
	}
	scale := 1 / math.Sqrt(norm)
	for i := range vec {
		vec[i] = float32(float64(vec[i]) * scale)
	}
}

type embeddingInput struct {
	seed   uint64
	tokens int
}

// embeddingInputs reads input: a string, strings, tokens, or token lists.
func embeddingInputs(raw json.RawMessage) ([]embeddingInput, error) {
	if !present(raw) {
		return nil, errors.New("Missing required parameter: 'input'.")
	}
	var one string
	if json.Unmarshal(raw, &one) == nil {
		return []embeddingInput{textInput(one)}, nil
	}
	var many []string
	if json.Unmarshal(raw, &many) == nil && len(many) > 0 {
		out := make([]embeddingInput, len(many))
		for i, s := range many {
			out[i] = textInput(s)
		}
		return out, nil
	}
	var tokens []int
	if json.Unmarshal(raw, &tokens) == nil && len(tokens) > 0 {
		return []embeddingInput{tokenInput(tokens)}, nil
	}
	var lists [][]int
	if err := json.Unmarshal(raw, &lists); err != nil || len(lists) == 0 {
		return nil, errors.New("input must be a non-empty string, array of strings, array of tokens or array of token arrays")
	}
	out := make([]embeddingInput, len(lists))
	for i, l := range lists {
		out[i] = tokenInput(l)
	}
	return out, nil
}

func textInput(s string) embeddingInput {
	h := fnv.New64a()
	_, _ = h.Write([]byte(s))
	return embeddingInput{seed: h.Sum64(), tokens: promptTokens(len(s))}
}

func tokenInput(tokens []int) embeddingInput {
	h := fnv.New64a()
	var b [8]byte
	for _, t := range tokens {
		binary.LittleEndian.PutUint64(b[:], uint64(t))
		_, _ = h.Write(b[:])
	}
	return embeddingInput{seed: h.Sum64(), tokens: max(len(tokens), 1)}
}

// tokens is what the job's inputs count, its usage and its bill.
func (j *embeddingJob) tokens() int {
	n := 0
	for _, in := range j.inputs {
		n += in.tokens
	}
	return n
}
