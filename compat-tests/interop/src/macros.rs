//! [`interop_tests!`](crate::interop_tests): the interop scenarios as tests, one per server,
//! layout and scenario, named `<server>::<layout>::<scenario>`.

/// One `#[tokio::test]` per server (moto, dynalite, DynamoDB Local), layout and scenario. A scenario is an
/// `async fn name(t: &Interop)` at the root of the test crate; each test gives it a fresh
/// [`Interop`](crate::Interop) (its own table and PHP harness) and ends it with
/// [`Interop::finish`](crate::Interop::finish).
///
/// ```ignore
/// // Every layout with prefix `app_`, and laravel8 with an empty prefix; plus laravel12 only:
/// interop_tests!(every_layout [php_lock_seen_by_rust, ...] + laravel12 [refresh_across_languages]);
/// // Chosen layouts (a module name, the KeyLayout, the prefix, its scenarios):
/// interop_tests! {
///     laravel8: Laravel8 "app_" [a_scenario],
///     laravel12: Laravel12 "app_" [a_scenario],
/// }
/// ```
// `crate::$name` is meant: the scenarios live in the test crate that calls the macro.
#[allow(clippy::crate_in_macro_def)]
#[macro_export]
macro_rules! interop_tests {
    (every_layout [$($all:ident),* $(,)?] $(+ laravel12 [$($l12:ident),* $(,)?])?) => {
        $crate::interop_tests! {
            laravel8: Laravel8 "app_" [$($all),*],
            laravel11: Laravel11 "app_" [$($all),*],
            laravel12: Laravel12 "app_" [$($all,)* $($($l12),*)?],
            // With an empty prefix every layout writes the same keys (`k`, `orders`).
            laravel8_no_prefix: Laravel8 "" [$($all),*],
        }
    };
    ($($module:ident: $layout:ident $prefix:literal [$($name:ident),* $(,)?]),+ $(,)?) => {
        mod moto {
            $crate::interop_tests!(@server Moto, $($module: $layout $prefix [$($name),*]),+);
        }
        mod dynalite {
            $crate::interop_tests!(@server Dynalite, $($module: $layout $prefix [$($name),*]),+);
        }
        mod ddblocal {
            $crate::interop_tests!(@server DdbLocal, $($module: $layout $prefix [$($name),*]),+);
        }
    };
    (@server $server:ident, $($module:ident: $layout:ident $prefix:literal [$($name:ident),*]),+) => {
        $(
            mod $module {
                $(
                    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
                    async fn $name() {
                        let t = $crate::Interop::new(
                            $crate::Server::$server,
                            $crate::ddblock::KeyLayout::$layout,
                            $prefix,
                        )
                        .await;
                        crate::$name(&t).await;
                        t.finish().await;
                    }
                )*
            }
        )+
    };
}
