<?php

declare(strict_types=1);

namespace Ddblock\Laravel\Tests;

use Aws\Credentials\CredentialProvider;
use Ddblock\Laravel\Tests\Support\FaultProxy;
use Throwable;

/**
 * The shared bad-input table (compat-tests/conformance/bad-input.json) through the PHP driver: the lock and
 * acquire cases, and the config cases of the driver's own settings (those with a `php` field: the
 * clock-skew margin); get, put and the rest of the config are Laravel's own DynamoDbStore, which
 * the driver does not change.
 * The driver is a drop-in for Laravel's lock, so where Laravel accepts an input (a ttl of 0 or
 * less is a day; names are not checked before the request) the driver does too, and the table
 * says what each case gets here: `php` in the case.
 */
final class BadInputTest extends TestCase
{
    /** @return array<string, array{array<string, mixed>}> */
    public static function cases(): array
    {
        $table = json_decode(
            (string) file_get_contents(self::root() . '/compat-tests/conformance/bad-input.json'),
            true,
            512,
            JSON_THROW_ON_ERROR
        );
        $out = [];
        foreach ($table['cases'] as $case) {
            if (in_array($case['op'], ['lock', 'acquire'], true) || ($case['op'] === 'config' && isset($case['php']))) {
                $out[$case['case']] = [$case];
            }
        }

        return $out;
    }

    /**
     * @dataProvider cases
     * @param  array<string, mixed>  $case
     */
    public function testBadInputGetsWhatTheTableSays(array $case): void
    {
        $endpoint = self::endpoint('moto');
        $table = self::table(self::client('moto'));
        $name = isset($case['name_repeat'])
            ? str_repeat($case['name_repeat'][0], $case['name_repeat'][1])
            : (string) ($case['name'] ?? '');
        $options = ['retries' => 1];
        // Each case runs against a fresh table, `missing` against one that does not exist.
        $proxy = null;
        $restore = [];
        switch ($case['server'] ?? null) {
            case 'unreachable':
                $socket = stream_socket_server('tcp://127.0.0.1:0');
                $endpoint = 'http://' . stream_socket_get_name($socket, false);
                fclose($socket);
                break;
            case 'throttling':
                $proxy = FaultProxy::start(self::cargoBinary('fault-proxy'), $endpoint, ['--throttle-rate', '1']);
                $endpoint = $proxy->url;
                break;
            case 'no_credentials':
                $vars = ['AWS_ACCESS_KEY_ID', 'AWS_SECRET_ACCESS_KEY', 'AWS_SESSION_TOKEN', 'AWS_PROFILE'];
                foreach ([...$vars, 'HOME', 'AWS_EC2_METADATA_DISABLED'] as $var) {
                    $restore[$var] = getenv($var);
                    putenv($var);
                }
                putenv('HOME=' . sys_get_temp_dir() . '/ddblock-no-credentials-' . getmypid());
                putenv('AWS_EC2_METADATA_DISABLED=true');
                $options['credentials'] = CredentialProvider::defaultProvider();
                break;
        }
        if (($case['table'] ?? null) === 'missing') {
            $table = 'ddblock_no_such_table';
        }
        $store = self::driverStore(self::layouts()[0], self::client($endpoint, null, $options), $table, '');
        try {
            if ($case['op'] === 'config') {
                // What DdblockServiceProvider does with `ddblock.clock_skew_margin` and
                // `ddblock.release_mode`.
                if (array_key_exists('clock_skew_margin', $case)) {
                    $store->setClockSkewMargin($case['clock_skew_margin']);
                }
                if (array_key_exists('release_mode', $case)) {
                    $store->setReleaseMode($case['release_mode']);
                }
                $got = ['configured' => true];
            } else {
                $got = ['acquires' => $store->lock($name, $case['ttl'])->get()];
            }
        } catch (Throwable $e) {
            $got = ['exception' => get_class($e), 'message' => $e->getMessage()];
            if (method_exists($e, 'getAwsErrorCode')) {
                $got['aws_code'] = $e->getAwsErrorCode();
            }
        } finally {
            $proxy?->stop();
            foreach ($restore as $var => $value) {
                putenv($value === false ? $var : "$var=$value");
            }
        }
        $expected = $case['php'];
        if (isset($expected['acquires'])) {
            $this->assertSame(['acquires' => $expected['acquires']], $got, $expected['why']);

            return;
        }
        $this->assertSame($expected['exception'], $got['exception'] ?? null, json_encode($got) ?: '');
        if (isset($expected['aws_code'])) {
            $this->assertSame($expected['aws_code'], $got['aws_code'], $got['message']);
        }
        $this->assertNotSame('', $got['message']);
    }
}
