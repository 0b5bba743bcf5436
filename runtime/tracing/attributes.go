package tracing

// Attribute keys. The gen_ai.* ones are the OpenTelemetry GenAI
// conventions' (still in development, so spelled here rather than taken
// from a semconv package that may drop them); pistra.* are our own.
const (
	operationName       = "gen_ai.operation.name"
	providerName        = "gen_ai.provider.name"
	requestModel        = "gen_ai.request.model"
	responseModel       = "gen_ai.response.model"
	requestStream       = "gen_ai.request.stream"
	timeToFirstChunk    = "gen_ai.response.time_to_first_chunk"
	finishReasons       = "gen_ai.response.finish_reasons"
	inputTokens         = "gen_ai.usage.input_tokens"
	outputTokens        = "gen_ai.usage.output_tokens"
	cacheReadTokens     = "gen_ai.usage.cache_read.input_tokens"
	cacheCreationTokens = "gen_ai.usage.cache_creation.input_tokens"
	reasoningTokens     = "gen_ai.usage.reasoning.output_tokens"
	errorType           = "error.type"

	channelOrigin = "pistra.channel_origin"
	channelName   = "pistra.channel"
	channelTier   = "pistra.tier"
	profileName   = "pistra.profile"
	keyName       = "pistra.key"
	planIndex     = "pistra.plan"
	requestID     = "pistra.request_id"
	attempts      = "pistra.attempts"
	attemptNumber = "pistra.attempt"
	retry         = "pistra.retry"
	failover      = "pistra.failover"
	skipReason    = "pistra.skip.reason"
	skipStatic    = "pistra.skip.static"
)
