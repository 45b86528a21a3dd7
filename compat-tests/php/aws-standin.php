<?php
/**
 * A small stand-in for the parts of aws-sdk-php that Laravel's DynamoDB cache
 * store uses (Debian ships no aws-sdk-php). Written from the DynamoDB JSON 1.0
 * wire protocol, not from the SDK's code.
 *
 * Laravel 8.83's DynamoDbStore references only two AWS classes:
 *   - Aws\DynamoDb\DynamoDbClient (constructor type hint; getItem, putItem,
 *     updateItem, deleteItem, batchGetItem, batchWriteItem calls), and
 *   - Aws\DynamoDb\Exception\DynamoDbException (caught; Laravel then checks
 *     str_contains($e->getMessage(), 'ConditionalCheckFailed')).
 * (CacheManager also does `new DynamoDbClient($config)`; the harness builds the
 * store itself.)
 *
 *   $client = new Aws\DynamoDb\DynamoDbClient([
 *       'endpoint' => 'http://127.0.0.1:8000', 'region' => 'us-east-1',
 *       'credentials' => ['key' => 'test', 'secret' => 'test'],
 *       'http' => ['timeout' => 10],   // seconds, optional
 *       'retries' => 0,                // optional, see below
 *   ]);
 *   $result = $client->getItem([...]);   // a plain PHP array
 *
 * Like the SDK: requests are SigV4-signed (a real signature; the local
 * emulators do not check it), 'B' values are base64-encoded on the way out
 * and decoded on the way in, errors become DynamoDbException.
 * Unlike the SDK: results are plain arrays, there are no *Async methods, no
 * paginators/waiters, and no retries unless 'retries' > 0 (the SDK retries
 * DynamoDB calls up to 10 times by default; tests want to see every failure).
 */

namespace Aws\Exception {
    class AwsException extends \RuntimeException
    {
        private $awsErrorCode;
        private $awsErrorType;
        private $statusCode;

        public function __construct(string $message, ?string $code = null, ?string $type = null,
                                    ?int $statusCode = null, ?\Throwable $previous = null)
        {
            parent::__construct($message, 0, $previous);
            $this->awsErrorCode = $code;
            $this->awsErrorType = $type;
            $this->statusCode = $statusCode;
        }

        /** e.g. 'ConditionalCheckFailedException'; null for network errors. */
        public function getAwsErrorCode() { return $this->awsErrorCode; }

        /** 'client' (HTTP 4xx) or 'server' (5xx); null for network errors. */
        public function getAwsErrorType() { return $this->awsErrorType; }

        public function getStatusCode() { return $this->statusCode; }
    }
}

namespace Aws\DynamoDb\Exception {
    class DynamoDbException extends \Aws\Exception\AwsException
    {
    }
}

namespace Aws\DynamoDb {
    use Aws\DynamoDb\Exception\DynamoDbException;

    class DynamoDbClient
    {
        /** Request members whose value is a JSON list even when empty (else an empty array encodes as {}). */
        private const LIST_MEMBERS = [
            'L', 'SS', 'NS', 'BS', 'Keys', 'AttributesToGet', 'AttributeDefinitions', 'KeySchema',
            'GlobalSecondaryIndexes', 'LocalSecondaryIndexes', 'NonKeyAttributes', 'TransactItems',
            'Tags', 'TagKeys', 'ReplicationGroup', 'Parameters',
        ];

        private const RETRYABLE = [
            'ProvisionedThroughputExceededException', 'ThrottlingException', 'RequestLimitExceeded',
            'InternalServerError', 'ServiceUnavailable', 'TransactionInProgressException',
        ];

        private $endpoint;
        private $host;
        private $path;
        private $region;
        private $key;
        private $secret;
        private $timeout;
        private $retries;
        private $curl;

        public function __construct(array $args)
        {
            if (empty($args['endpoint'])) {
                throw new \InvalidArgumentException('aws-standin: the "endpoint" option is required');
            }
            $this->endpoint = rtrim($args['endpoint'], '/');
            $url = parse_url($this->endpoint);
            $this->host = $url['host'] . (isset($url['port']) ? ':' . $url['port'] : '');
            $this->path = ($url['path'] ?? '') === '' ? '/' : $url['path'];
            $this->region = $args['region'] ?? (getenv('AWS_DEFAULT_REGION') ?: 'us-east-1');
            $this->key = $args['credentials']['key'] ?? (getenv('AWS_ACCESS_KEY_ID') ?: 'test');
            $this->secret = $args['credentials']['secret'] ?? (getenv('AWS_SECRET_ACCESS_KEY') ?: 'test');
            $this->timeout = (float) ($args['http']['timeout'] ?? 0);
            $this->retries = (int) ($args['retries'] ?? 0);
        }

        public function putItem(array $args = []) { return $this->execute('PutItem', $args); }
        public function getItem(array $args = []) { return $this->execute('GetItem', $args); }
        public function deleteItem(array $args = []) { return $this->execute('DeleteItem', $args); }
        public function updateItem(array $args = []) { return $this->execute('UpdateItem', $args); }
        public function batchGetItem(array $args = []) { return $this->execute('BatchGetItem', $args); }
        public function batchWriteItem(array $args = []) { return $this->execute('BatchWriteItem', $args); }
        public function createTable(array $args = []) { return $this->execute('CreateTable', $args); }
        public function describeTable(array $args = []) { return $this->execute('DescribeTable', $args); }

        /** Any other operation: $client->listTables([...]) sends ListTables. */
        public function __call($method, $arguments)
        {
            return $this->execute(ucfirst($method), $arguments[0] ?? []);
        }

        /** SDK-style call: PHP array in, PHP array out. */
        public function execute(string $operation, array $args): array
        {
            $body = json_encode($this->toWire($args, null, null), JSON_UNESCAPED_SLASHES);
            if ($body === false) {
                // e.g. a non-UTF-8 string (DynamoDB's S type must be UTF-8).
                throw new \InvalidArgumentException("aws-standin: cannot JSON-encode the $operation request: " . json_last_error_msg());
            }

            return $this->fromWire(json_decode($this->send($operation, $body), true) ?? [], null);
        }

        /**
         * Sends one request body as is, returns the response body as is.
         * Throws DynamoDbException for DynamoDB errors and network errors.
         */
        public function send(string $operation, string $body): string
        {
            for ($attempt = 0; ; $attempt++) {
                try {
                    return $this->sendOnce($operation, $body);
                } catch (DynamoDbException $e) {
                    $retryable = $e->getAwsErrorCode() === null                   // network error
                        || $e->getStatusCode() >= 500
                        || in_array($e->getAwsErrorCode(), self::RETRYABLE, true);
                    if (! $retryable || $attempt >= $this->retries) {
                        throw $e;
                    }
                    usleep(min(50000 * (2 ** $attempt), 2000000)); // 50 ms, 100 ms, ... 2 s
                }
            }
        }

        private function sendOnce(string $operation, string $body): string
        {
            if ($this->curl === null) {
                $this->curl = curl_init(); // one handle for all calls: keep-alive
            }
            $ch = $this->curl;
            curl_setopt_array($ch, [
                CURLOPT_URL => $this->endpoint . ($this->path === '/' ? '/' : ''),
                CURLOPT_POST => true,
                CURLOPT_POSTFIELDS => $body,
                CURLOPT_HTTPHEADER => $this->headers($operation, $body),
                CURLOPT_RETURNTRANSFER => true,
                CURLOPT_TIMEOUT_MS => (int) round($this->timeout * 1000), // 0 = no limit
                CURLOPT_CONNECTTIMEOUT_MS => $this->timeout > 0 ? (int) round($this->timeout * 1000) : 10000,
            ]);
            $response = curl_exec($ch);
            $where = sprintf('Error executing "%s" on "%s"; AWS HTTP error: ', $operation, $this->endpoint);
            if ($response === false) {
                $error = sprintf('cURL error %d: %s', curl_errno($ch), curl_error($ch));
                curl_close($ch);
                $this->curl = null; // the connection may be in any state: start afresh
                throw new DynamoDbException($where . $error);
            }
            $status = curl_getinfo($ch, CURLINFO_RESPONSE_CODE);
            if ($status >= 200 && $status < 300) {
                return $response;
            }

            // {"__type":"com.amazonaws.dynamodb.v20120810#ConditionalCheckFailedException","message":"..."}
            $error = json_decode($response, true);
            $type = is_array($error) ? (string) ($error['__type'] ?? '') : '';
            $code = $type !== '' ? substr($type, strrpos($type, '#') === false ? 0 : strrpos($type, '#') + 1) : "HTTP$status";
            $message = is_array($error) ? ($error['message'] ?? $error['Message'] ?? '') : trim($response);
            $kind = $status >= 500 ? 'server' : 'client';
            throw new DynamoDbException("$where$code ($kind): $message", $code, $kind, $status);
        }

        /** JSON 1.0 headers with an AWS Signature Version 4. */
        private function headers(string $operation, string $body): array
        {
            $amzDate = gmdate('Ymd\THis\Z');
            $date = substr($amzDate, 0, 8);
            $headers = [ // lower-case names, sorted: the canonical form
                'content-type' => 'application/x-amz-json-1.0',
                'host' => $this->host,
                'x-amz-date' => $amzDate,
                'x-amz-target' => 'DynamoDB_20120810.' . $operation,
            ];
            $signedHeaders = implode(';', array_keys($headers));
            $canonical = "POST\n{$this->path}\n\n"
                . implode('', array_map(fn ($k, $v) => "$k:$v\n", array_keys($headers), $headers))
                . "\n$signedHeaders\n" . hash('sha256', $body);
            $scope = "$date/{$this->region}/dynamodb/aws4_request";
            $toSign = "AWS4-HMAC-SHA256\n$amzDate\n$scope\n" . hash('sha256', $canonical);
            $signingKey = 'AWS4' . $this->secret;
            foreach ([$date, $this->region, 'dynamodb', 'aws4_request'] as $part) {
                $signingKey = hash_hmac('sha256', $part, $signingKey, true);
            }
            $signature = hash_hmac('sha256', $toSign, $signingKey);

            $lines = [];
            foreach ($headers as $k => $v) {
                $lines[] = "$k: $v";
            }
            $lines[] = "Authorization: AWS4-HMAC-SHA256 Credential={$this->key}/$scope, SignedHeaders=$signedHeaders, Signature=$signature";
            $lines[] = 'Expect:'; // no "100-continue" round trip

            return $lines;
        }

        /**
         * PHP request array -> value for json_encode. Empty arrays become {}
         * (maps: Item, Key, ExpressionAttributeValues, ...) unless the member
         * is a list; BatchWriteItem's RequestItems.<table> is a list too.
         */
        private function toWire($value, $member, $parentMember)
        {
            if (! is_array($value)) {
                return ($member === 'B' && is_string($value)) ? base64_encode($value) : $value;
            }
            if ($value === []) {
                $isList = in_array($member, self::LIST_MEMBERS, true) || $parentMember === 'RequestItems';

                return $isList ? [] : new \stdClass();
            }
            if ($member === 'BS' && array_is_list($value)) {
                return array_map('base64_encode', $value);
            }
            $out = [];
            foreach ($value as $k => $v) {
                $out[$k] = $this->toWire($v, is_int($k) ? null : $k, $member);
            }

            return array_is_list($value) ? $out : (object) $out;
        }

        /** Decoded response -> the SDK's shape: 'B'/'BS' values base64-decoded. */
        private function fromWire($value, $member)
        {
            if (! is_array($value)) {
                return ($member === 'B' && is_string($value)) ? base64_decode($value) : $value;
            }
            if ($member === 'BS' && array_is_list($value)) {
                return array_map('base64_decode', $value);
            }
            foreach ($value as $k => $v) {
                $value[$k] = $this->fromWire($v, is_int($k) ? null : $k);
            }

            return $value;
        }
    }
}
