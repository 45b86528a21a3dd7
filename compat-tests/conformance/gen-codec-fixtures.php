<?php
/**
 * Fixture generator for ddblock's PHP value codec (core/src/format/codec).
 *
 * Usage (from the repository root):
 *   php compat-tests/conformance/gen-codec-fixtures.php > compat-tests/conformance/php-codec.json
 *
 * Records, from the real PHP interpreter, what serialize()/unserialize(),
 * is_numeric(), filter_var(FILTER_VALIDATE_INT), (float)/(string) casts and
 * Laravel's DynamoDbStore type()/serialize()/unserialize() produce, so the
 * Rust tests can check the codec byte for byte. Every byte string is base64
 * because PHP strings are binary. Output is deterministic for a given PHP
 * version (random floats come from a seeded mt_rand).
 */

declare(strict_types=1);

// Pin the ini settings the format depends on (these are PHP's defaults).
ini_set('precision', '14');
ini_set('serialize_precision', '-1');
error_reporting(E_ALL);

enum Suit
{
    case Hearts;
    case Spades;
}

enum Level: int
{
    case Low = 1;
    case High = 9;
}

class Props
{
    public $pub = 1;
    protected $prot = 'p';
    private $priv = [1, 2];
}

class ChildProps extends Props
{
    private $priv = 'child';
}

class Magic
{
    public $ignored = 'x';

    public function __serialize(): array
    {
        return ['k' => [1, 2], 7 => 'seven'];
    }

    public function __unserialize(array $data): void
    {
    }
}

// A Serializable-only class still produces the C: format in PHP 8.2, but
// declaring it raises a deprecation; declare it quietly at run time.
error_reporting(E_ALL & ~E_DEPRECATED);
eval('class Legacy implements Serializable {
    public $d = [1, "two"];
    public function serialize() { return serialize($this->d); }
    public function unserialize($s) { $this->d = unserialize($s); }
}');
error_reporting(E_ALL);

// ---- Laravel's DynamoDbStore value handling (Illuminate\Cache\DynamoDbStore) ----

function laravel_type($value): string
{
    return is_numeric($value) ? 'N' : 'S';
}

function laravel_serialize($value): string
{
    return is_numeric($value) ? (string) $value : serialize($value);
}

function laravel_unserialize($value)
{
    if (filter_var($value, FILTER_VALIDATE_INT) !== false) {
        return (int) $value;
    }
    if (is_numeric($value)) {
        return (float) $value;
    }
    return unserialize($value);
}

// ---- helpers ----

/**
 * serialize() without back-references: every r:/R: is written out in full,
 * which is what ddblock's decoder produces (it resolves references by copy).
 */
function serialize_noref($v, int $depth = 0): string
{
    if ($depth > 200) {
        throw new RuntimeException('cyclic');
    }
    if (is_array($v)) {
        $out = 'a:' . count($v) . ':{';
        foreach ($v as $k => $x) {
            $out .= serialize($k) . serialize_noref($x, $depth + 1);
        }
        return $out . '}';
    }
    if (is_object($v)) {
        if ($v instanceof UnitEnum || $v instanceof Serializable
            || $v instanceof __PHP_Incomplete_Class) {
            return serialize($v);
        }
        // __serialize() data keeps its key types; a property table (as seen
        // through an (array) cast) always has string names in serialize().
        $custom = method_exists($v, '__serialize');
        $props = $custom ? $v->__serialize() : (array) $v;
        $class = get_class($v);
        $out = 'O:' . strlen($class) . ':"' . $class . '":' . count($props) . ':{';
        foreach ($props as $k => $x) {
            $out .= serialize($custom ? $k : (string) $k) . serialize_noref($x, $depth + 1);
        }
        return $out . '}';
    }
    return serialize($v);
}

function b64(string $s): string
{
    return base64_encode($s);
}

// ---- values (encode direction) ----

function values(): array
{
    $v = [];
    $v['null'] = null;
    $v['true'] = true;
    $v['false'] = false;
    foreach ([0, 1, -1, 42, 12345, PHP_INT_MAX, PHP_INT_MIN, 1000000] as $i) {
        $v["int $i"] = $i;
    }
    $floats = [
        '0.1' => 0.1, '0.1+0.2' => 0.1 + 0.2, '1e25' => 1e25, '1e-7' => 1e-7,
        '-0.0' => -0.0, '0.0' => 0.0, '1.5' => 1.5, '100.0' => 100.0, 'INF' => INF,
        '-INF' => -INF, 'NAN' => NAN, '1e15' => 1e15, '1e14' => 1e14, '1e16' => 1e16,
        '1e17' => 1e17, '123456789012345678.0' => 123456789012345678.0,
        '0.0001' => 0.0001, '0.00001' => 0.00001, '12345678901234.5' => 12345678901234.5,
        '-2.5' => -2.5, '1e200' => 1e200, '1e-200' => 1e-200, 'PHP_FLOAT_MAX' => PHP_FLOAT_MAX,
        'PHP_FLOAT_EPSILON' => PHP_FLOAT_EPSILON, '5e-324' => 5e-324, '1/3' => 1 / 3,
        '9007199254740993.0' => 9007199254740993.0, '99999999999999.99' => 99999999999999.99,
    ];
    foreach ($floats as $name => $f) {
        $v["float $name"] = $f;
    }
    $strings = [
        'empty' => '', 'hello' => 'hello', 'utf8' => '日本語', 'emoji' => "\u{1F600}",
        'quotes' => "a\"b'c;d}", 'binary' => "\x00\xff", 'nul inside' => "a\x00b",
        'newline' => "line1\nline2", 'backslash' => 'C:\\path', 'owner token' => 'y5lgfdhGNbGy3sTY',
        '12345' => '12345', '007' => '007', '1e5' => '1e5', ' 12' => ' 12', '12 ' => '12 ',
        '0x1A' => '0x1A', '.5' => '.5', '5.' => '5.', '-0' => '-0', '+1' => '+1',
        '1_000' => '1_000', 'space' => ' ', 'INF text' => 'INF', '1.5' => '1.5',
        '-12.5e-3' => '-12.5e-3', 'big int text' => '99999999999999999999',
        'many digits' => '123456789012345678901234567890123456789012', '1e200 text' => '1e200',
        'tab 5' => "\t5", '5 newline' => "5\n", 'formfeed 5' => "\f5", 'abc' => 'abc',
        'serialized look-alike' => 'i:5;', 'latin1 byte' => "caf\xe9",
    ];
    foreach ($strings as $name => $s) {
        $v["string $name"] = $s;
    }
    $v['array empty'] = [];
    $v['array list'] = [1, 2, 3];
    $v['array mixed list'] = [null, true, 1.5, 'x', [1]];
    $v['array assoc'] = ['a' => 1, 'b' => 'two'];
    $v['array int keys'] = [5 => 'five', -3 => 'minus three', 0 => 'zero'];
    $v['array mixed keys'] = ['x' => 1, 10 => 2, 'y' => [3 => 'z'], '' => 'empty key'];
    $v['array nested'] = ['a' => ['b' => ['c' => ['d' => null]]], 'list' => [[1, 2], [3, [4]]]];
    $v['array laravel put'] = ['a' => 1];
    $v['array utf8 keys'] = ['日本' => '語', "\u{1F600}" => 1];
    $v['array big keys'] = [PHP_INT_MAX => 1, PHP_INT_MIN => 2];
    $v['stdClass empty'] = new stdClass();
    $o = new stdClass();
    $o->name = 'n';
    $o->list = [1, 2];
    $o->{'5'} = 'numeric prop';
    $v['stdClass'] = $o;
    $v['class props'] = new Props();
    $v['class child props'] = new ChildProps();
    $v['class __serialize'] = new Magic();
    $v['enum pure'] = Suit::Hearts;
    $v['enum backed'] = Level::High;
    $v['enums in array'] = [Suit::Hearts, Suit::Spades, Suit::Hearts, Level::Low];
    $v['Serializable C:'] = new Legacy();
    $v['Serializable repeated'] = (function () {
        $l = new Legacy();
        return [$l, $l, new stdClass()];
    })();
    $v['reference R:'] = (function () {
        $a = [1];
        $a[1] = &$a[0];
        return $a;
    })();
    $v['reference R: string x3'] = (function () {
        $s = 'str';
        return [&$s, &$s, 5, &$s];
    })();
    $v['reference R: to array'] = (function () {
        $inner = [1, [2]];
        $a = ['in' => &$inner, 'again' => &$inner];
        return $a;
    })();
    $v['repeated object r:'] = (function () {
        $o = new stdClass();
        $o->x = 1;
        return [$o, $o, [$o]];
    })();
    $v['repeated object after nested r:'] = (function () {
        $o = new stdClass();
        return [1, [2, 3], $o, 4, $o, ['k' => $o]];
    })();
    $v['object property refs'] = (function () {
        $o = new stdClass();
        $o->a = [1, 2];
        $p = new stdClass();
        $p->first = $o;
        $p->second = $o;
        $p->n = 5;
        return $p;
    })();
    $v['__serialize repeated'] = (function () {
        $m = new Magic();
        return [$m, 5, $m];
    })();
    return $v;
}

function value_records(): array
{
    $out = [];
    foreach (values() as $name => $value) {
        $ser = serialize($value);
        $rec = ['name' => $name, 'serialized' => b64($ser)];
        $expanded = serialize_noref($value);
        if ($expanded !== $ser) {
            $rec['expanded'] = b64($expanded);
        }
        if (is_scalar($value) || $value === null) {
            $rec['is_numeric'] = is_numeric($value);
        }
        $text = laravel_serialize($value);
        $rec['stored_type'] = laravel_type($value);
        $rec['stored_text'] = b64($text);
        $rec['stored_text_utf8'] = mb_check_encoding($text, 'UTF-8');
        // What Laravel's get() returns when it reads back exactly what put() wrote
        // (DynamoDB may also normalise N text, e.g. "007" to "7"; not modelled here).
        $back = @laravel_unserialize($text);
        $rec['read_back'] = ($back === false && $text !== 'b:0;') ? null : b64(serialize_noref($back));
        $out[] = $rec;
    }
    return $out;
}

// ---- texts (decode direction) ----

function text_records(): array
{
    $texts = [
        '0', '1', '-1', '+1', '-0', '+0', '00', '007', '-007', '42', '12345',
        '9223372036854775807', '9223372036854775808', '-9223372036854775808',
        '-9223372036854775809', '99999999999999999999', '1.5', '-2.5', '1.0', '0.0', '-0.0',
        '1e5', '1E5', '1e+5', '1E-5', '1e', '1e+', '1.e3', '.e3', '.5', '5.', '.', '-.5',
        '+.5e3', '1e999', '-1e999', '1e-999', '0.1', '0.30000000000000004', '1.0E+25',
        '4.9406564584125E-324', '123456789012345678901234567890', '0x1A', '0b11', '1_000',
        '', ' ', '  ', ' 12', '12 ', " 12 ", "\t12", "12\t", "\n12", "12\n", "\r12", "12\r",
        "\v12", "12\v", "\f12", "12\f", " +12 ", " -0 ", "1 2", "1 e5", '+-1', '--1', '1.2.3',
        "12\x00", "\x0012", 'inf', 'INF', '-INF', 'nan', 'NAN', 'infinity', '12abc', 'abc',
        "\u{0663}", "\xc2\xa012", '１２', 'N;', 'b:0;', 'b:1;', 'i:5;', 'd:0.5;', 's:5:"hello";',
        's:16:"y5lgfdhGNbGy3sTY";', 'a:1:{s:1:"a";i:1;}', 'a:0:{}', 's:0:"";', 'i:5;garbage',
        'not serialized', 's:3:"ab";', 'O:8:"stdClass":0:{}', 'E:11:"Suit:Hearts";', 'd:INF;',
        'd:NAN;', 'i:-0;', 's:9:"日本語";',
    ];
    $out = [];
    foreach ($texts as $t) {
        $f = filter_var($t, FILTER_VALIDATE_INT);
        $back = @laravel_unserialize($t);
        $out[] = [
            'text' => b64($t),
            'filter_validate_int' => $f === false ? null : $f,
            'is_numeric' => is_numeric($t),
            'float_cast' => serialize((float) $t),
            'int_cast' => (int) $t,
            'laravel_read' => ($back === false && $t !== 'b:0;') ? null : b64(serialize_noref($back)),
        ];
    }
    return $out;
}

// ---- floats (both text forms) ----

function float_records(): array
{
    $fixed = [
        0.0, -0.0, 0.1, 0.2, 0.3, 0.1 + 0.2, 1.0, -1.0, 1.5, 2.5, 100.0, 1e13, 1e14, 1e15, 1e16,
        1e17, 1e18, 1e21, 1e22, 1e23, 1e25, 1e100, 1e300, 1e-4, 1e-5, 1e-7, 1e-300, 5e-324,
        2.2250738585072014e-308, 1.7976931348623157e308, 123456789012345678.0,
        12345678901234.5, 12345678901235.5, 1234567890123.25, 99999999999999.99,
        999999999999999.9, 0.5, 0.25, 0.125, 1 / 3, 2 / 3, 3.14159265358979, M_PI, M_E,
        9007199254740992.0, 9007199254740993.0, 100000000000001.0, 100000000000005.0,
        100000000000015.0, 726793013210305.0, 570769652658498.25, 1916470683816962.25, 4.35, 0.000123456789, 1.0000000000000002,
        0.9999999999999999, 1e-10, 123.456, -987654.321, 5e-5, 0.00015, 65536.0, 4294967296.0,
    ];
    $floats = $fixed;
    mt_srand(20240601, MT_RAND_MT19937);
    for ($i = 0; $i < 400; $i++) {
        // Random bit patterns (all magnitudes), skipping NaN payloads.
        $bits = (mt_rand(0, 0x7fffffff) << 33) | (mt_rand(0, 0x1ffff) << 16) | mt_rand(0, 0xffff);
        if (mt_rand(0, 1) === 1) {
            $bits |= PHP_INT_MIN;
        }
        $f = unpack('E', pack('J', $bits))[1];
        if (is_nan($f) || is_infinite($f)) {
            continue;
        }
        $floats[] = $f;
    }
    for ($i = 0; $i < 200; $i++) {
        // "Human" decimals with few digits, where rounding ties are likelier.
        $floats[] = (float) (mt_rand(0, 1000000) / [1, 10, 100, 1000, 10000, 1e6][mt_rand(0, 5)]);
    }
    $floats[] = INF;
    $floats[] = -INF;
    $floats[] = NAN;
    $out = [];
    foreach ($floats as $f) {
        $out[] = [
            'bits' => bin2hex(pack('E', $f)),
            'string' => (string) $f,
            'serialized' => serialize($f),
        ];
    }
    return $out;
}

// ---- unserialize() acceptance of odd and malformed inputs ----

function malformed_records(): array
{
    $inputs = [
        '', ' ', 'x', 'N', 'N;', 'N;;', 'n;', ' i:1;', 'I:1;', 'i:1', 'i:;', 'i:+5;', 'i:-0;',
        'i:007;', 'i:+-1;', 'i:1.5;', 'i:9223372036854775807;', 'i:9223372036854775808;',
        'i:-9223372036854775808;', 'i:-9223372036854775809;', 'i:99999999999999999999;',
        'b:0;', 'b:1;', 'b:2;', 'b:;', 'b:01;', 'b:1', 'd:1.5;', 'd:1e5;', 'd:1.5e+3;',
        'd:1.5E3;', 'd:.5;', 'd:5.;', 'd:1.;', 'd:.;', 'd:1e;', 'd:;', 'd:0x1;', 'd:1e400;',
        'd:-0;', 'd:+5;', 'd:-.5e-3;', 'd:INF;', 'd:-INF;', 'd:+INF;', 'd:NAN;', 'd:-NAN;',
        'd:inf;', 'd:1.0E+25;', 'd:1.0e+25;', 's:0:"";', 's:1:"a";', 's:01:"a";', 's:-1:"";',
        's:3:"ab";', 's:2:"ab"', 's:2:"ab":', 's:2:"abc";', 's:1:"a"; ', 's:1:"a";trailing',
        's:99999999999:"a";', 's:18446744073709551617:"a";', 'S:1:"\\61";', 'S:3:"\\61bc";',
        'S:1:"\\FF";', 'S:2:"\\6";', 'S:1:"\\6g";', 'S:1:"\\";', 'a:0:{}', 'a:0:{};',
        'a:-1:{}', 'a:01:{i:0;i:1;}', 'a:1:{i:0;i:1;}', 'a:1:{i:0;i:1;', 'a:2:{i:0;i:1;}',
        'a:1:{i:0;i:1;i:1;i:2;}', 'a:1:{i:0;i:1;};', 'a:1:{i:0;i:1;}}', 'a:1:{d:1;i:1;}',
        'a:1:{N;i:1;}', 'a:1:{b:1;i:1;}', 'a:1:{s:1:"k";}', 'a:1:{i:0}', 'a:1:i:0;i:1;}',
        'a:2:{i:0;i:1;i:0;i:2;}', 'a:2:{s:1:"5";i:1;i:5;i:2;}', 'a:1:{s:1:"5";i:1;}',
        'a:99999999:{', 'a:1:{a:0:{}i:1;}',
        'O:8:"stdClass":0:{}', 'O:8:"stdclass":0:{}', 'O:8:"stdClass":-1:{}',
        'O:8:"stdClass":+0:{}', 'O:8:"stdClass":00:{}', 'O:8:"stdClass":1:{}',
        'O:8:"stdClass":0:{s:1:"a";i:1;}', 'O:8:"stdClass":1:{s:1:"a";i:1;',
        'O:8:"stdClass":1:{i:5;i:1;}', 'O:8:"stdClass":1:{s:1:"a";i:1;}', 'O:7:"stdClass":0:{}',
        'O:8:"stdClass"', 'O:8:"stdClass":0:', 'O:3:"Foo":0:{}', 'O:3:"a b":0:{}', 'O:0:"":0:{}',
        'O:1:"1":0:{}', 'O:1:"_":0:{}', 'O:3:"A\\B":0:{}', 'O:2:"\\A":0:{}', 'O:1:"\\":0:{}',
        'O:3:"a-b":0:{}', "O:3:\"A\x00B\":0:{}", 'o:8:"stdClass":0:{}',
        'O:5:"Props":3:{s:3:"pub";i:1;s:7:"' . "\0*\0" . 'prot";s:1:"p";s:11:"' . "\0Props\0"
            . 'priv";a:0:{}}',
        'C:8:"stdClass":0:{}', 'C:3:"Foo":2:{ab}', 'C:3:"Foo":3:{ab}', 'C:3:"Foo":0:{}',
        'C:6:"Legacy":23:{a:2:{i:0;i:1;i:1;i:2;}}', 'C:3:"Foo":-1:{}',
        'E:11:"Suit:Hearts";', 'E:11:"Suit:Hearts"', 'E:4:"Suit";', 'E:5:"Suit:";',
        'E:12:"Suit:Hearts:";', 'E:7:":Hearts";', 'E:9:"Level:Low";', 'E:11:"Suit:Hearts";x',
        'a:2:{i:0;O:8:"stdClass":0:{}i:1;r:2;}', 'a:2:{i:0;i:7;i:1;r:2;}',
        'a:2:{i:0;i:7;i:1;R:2;}', 'a:3:{i:0;O:8:"stdClass":0:{}i:1;r:2;i:2;r:3;}',
        'a:3:{i:0;i:7;i:1;r:2;i:2;r:3;}', 'a:3:{i:0;i:7;i:1;R:2;i:2;r:3;}',
        'a:3:{i:0;i:7;i:1;R:2;i:2;R:3;}', 'a:3:{i:0;i:7;i:1;R:2;i:2;R:4;}',
        'a:2:{i:0;i:7;i:1;R:0;}', 'a:2:{i:0;i:7;i:1;R:5;}', 'a:2:{i:0;i:7;i:1;r:0;}',
        'a:2:{i:0;i:7;i:1;R:-1;}', 'a:2:{i:0;i:7;i:1;R:99999999999999999999;}', 'R:1;', 'r:1;',
        'a:1:{i:0;r:1;}', 'a:1:{i:0;R:1;}', 'a:2:{i:0;a:0:{}i:1;r:2;}',
        'a:2:{i:0;a:1:{i:0;i:1;}i:1;R:2;}', 'a:1:{i:0;a:1:{i:0;R:2;}}',
        'O:8:"stdClass":1:{s:1:"y";R:1;}', 'O:8:"stdClass":1:{s:1:"y";r:1;}',
        'a:1:{i:0;O:8:"stdClass":1:{s:1:"y";r:2;}}',
        'a:2:{i:0;E:11:"Suit:Hearts";i:1;r:2;}', 'a:2:{i:0;C:3:"Foo":0:{}i:1;r:2;}',
        'a:2:{i:0;a:1:{i:0;O:8:"stdClass":0:{}}i:1;r:3;}',
        'a:3:{i:0;O:8:"stdClass":1:{s:1:"a";i:1;}i:1;r:3;i:2;r:2;}',
    ];
    // Every proper prefix of a rich serialization is truncated input.
    $rich = serialize(['k' => [1, 'two', 3.5, null, true], 'o' => new Props(), 'e' => Suit::Spades]);
    for ($i = 0; $i < strlen($rich); $i++) {
        $inputs[] = substr($rich, 0, $i);
    }
    $out = [];
    $seen = [];
    foreach ($inputs as $in) {
        if (isset($seen[$in])) {
            continue;
        }
        $seen[$in] = true;
        $r = @unserialize($in);
        $accepted = $r !== false || $in === 'b:0;' || str_starts_with($in, 'b:0;');
        $rec = ['input' => b64($in), 'php_accepts' => $accepted];
        if ($accepted) {
            try {
                $rec['php_result'] = b64(serialize_noref($r));
            } catch (RuntimeException $e) {
                $rec['cyclic'] = true;
            }
        }
        $out[] = $rec;
    }
    return $out;
}

$data = [
    'about' => 'Generated by compat-tests/conformance/gen-codec-fixtures.php; do not edit by hand.',
    'php_version' => PHP_MAJOR_VERSION . '.' . PHP_MINOR_VERSION,
    'values' => value_records(),
    'texts' => text_records(),
    'floats' => float_records(),
    'unserialize' => malformed_records(),
];

echo json_encode($data, JSON_PRETTY_PRINT | JSON_UNESCAPED_SLASHES | JSON_THROW_ON_ERROR), "\n";
